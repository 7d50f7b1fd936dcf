"""Names of files that editors, downloaders and tools leave behind: never requests, never wake-ups.

Editors save in different ways (DEPENDENCY_NOTES: watchdog): in place, through a temporary file
that is then moved over the original (sed -i, JetBrains), or by moving the original aside
(emacs); Office marks an open document with a `~$` owner file. Each leaves short-lived files
whose names follow a handful of fixed patterns; the inbox scan and the watchdog handler both use
this one predicate to skip them.
"""

from __future__ import annotations

import os
import re

# Suffixes of temporary, partial, swap and backup files (compared lower-case).
_IGNORED_SUFFIXES = (
    "~",  # emacs, gedit, many others: backup copy
    ".tmp",
    ".temp",
    ".part",  # Firefox, wget, curl -C: an unfinished download
    ".crdownload",  # Chrome: an unfinished download
    ".bak",
    ".kate-swp",
    "___jb_tmp___",  # JetBrains "safe write": the new content before the rename
    "___jb_old___",  # JetBrains "safe write": the old content kept aside
)
# vim swap files: .swp, then .swo, .swn … down to .swa as more sessions open; .swx is a probe.
_VIM_SWAP = re.compile(r".*\.sw[a-px]", re.IGNORECASE)
# `sed -i` writes its result to "sed" + 6 random letters/digits, then renames it.
_SED_TEMP = re.compile(r"sed[A-Za-z0-9]{6}")
# vim checks that a folder is writable by creating "4913" (then 5036, 5159 … if taken).
_VIM_PROBE_FIRST = 4913
_VIM_PROBE_STEP = 123


def _is_vim_probe(name: str) -> bool:
    if not name.isdigit() or not name.isascii():
        return False
    number = int(name)
    return number >= _VIM_PROBE_FIRST and (number - _VIM_PROBE_FIRST) % _VIM_PROBE_STEP == 0


def is_ignorable_name(name: str) -> bool:
    """True for hidden files and editor swap/temp/backup names (a base name, or a path's)."""
    base = os.path.basename(name.rstrip("/\\")) if ("/" in name or "\\" in name) else name
    if not base or base.startswith("."):
        # Dotfiles include vim's .x.swp, emacs's .#x lock links and .DS_Store.
        return True
    lowered = base.lower()
    if lowered.endswith(_IGNORED_SUFFIXES):
        return True
    if len(base) >= 2 and base.startswith("#") and base.endswith("#"):
        return True  # emacs auto-save: #name#
    if base.startswith("~$"):
        return True  # Microsoft Office: the owner (lock) file of an open document
    return bool(_VIM_SWAP.fullmatch(base) or _SED_TEMP.fullmatch(base) or _is_vim_probe(base))
