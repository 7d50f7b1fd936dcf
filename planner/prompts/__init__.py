"""The model-backed Planner's prompt templates, one markdown file per plan target (package data).

Each file starts with `<!-- prompt_version: X -->`; the version enters the LLM cache key, so bump
it whenever the text changes. Placeholders are `string.Template` names (`$request`); a literal
dollar sign is written `$$`.
"""
