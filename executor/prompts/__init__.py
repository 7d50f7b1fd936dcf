"""Prompt templates of the model-backed Executor, shipped as package data (string.Template)."""
