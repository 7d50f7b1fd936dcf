"""The one place litellm is imported: once, on the first model call, offline and silent.

`import litellm` costs ~3 s and downloads a price list unless told not to (DEPENDENCY_NOTES):
nothing that starts, lists or confirms may pay for it, so every user imports it through here.
"""

from __future__ import annotations

import logging
import os
import threading
from types import ModuleType

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_litellm: ModuleType | None = None
_import_lock = threading.Lock()


def load_litellm() -> ModuleType:
    """Import litellm once, offline and silent (see DEPENDENCY_NOTES)."""
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            # Without it the import downloads a price list, and hangs on a hanging network.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            if hasattr(litellm, "disable_hf_tokenizer_download"):
                litellm.disable_hf_tokenizer_download = True
            if hasattr(litellm, "telemetry"):
                litellm.telemetry = False
            for name in LITELLM_LOGGERS:
                logger = logging.getLogger(name)
                logger.handlers.clear()
                logger.addHandler(logging.NullHandler())
                logger.propagate = False
            _litellm = litellm
    return _litellm
