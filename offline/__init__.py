"""TODO-FACE"""
