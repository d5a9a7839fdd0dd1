"""Patterns the linearity test must judge right: quadratic ones pcidoc's importers held before
issues 23 and 30, and the linear rewrites that replaced them (``test_regex_linear.py`` runs the
child on this module to show that the method catches the first and passes the second).

``PREFIXED_*`` are quadratic only where their own literal prefix leads into the ambiguous
repetition: runs without that prefix, what the test fed before issue 30, leave them alone.
"""

from __future__ import annotations

import re

# Quadratic whatever precedes the run (issue 23): two blank runs around an optional '#'.
QUADRATIC_NTHREAD = re.compile(r"^\s*#?\s*nThread")
# Quadratic after their own prefix (issue 30).
PREFIXED_LSPCI_HEADER = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7])\s+"
    r"(?P<cls>[^:]{3,60}?)\s*(?:\[[0-9a-fA-F]{4}\])?:\s*(?P<name>.*)$"
)
PREFIXED_KERNEL_RELEASE = re.compile(r"Linux-(\d[^\s]*?)-(?:x86_64|aarch64|ppc64le|s390x)")
PREFIXED_NCCL_PLUGIN = re.compile(
    r"^(?:P2P plugin|NET/Plugin\s*:\s*Loaded (?:net|collnet) plugin)\s*:?\s*(\S.*?)\s*$"
)
PREFIXED_AER_LAYER = re.compile(r"aer_layer=(?P<layer>[^,]+),\s*aer_agent=(?P<agent>.+)$")
# Quadratic only after a token that follows the prefix (blanks alone are taken by the \s*
# before the lazy group): a collect_env line "GPU 0: NAME" padded with blanks (issue 30).
PREFIXED_GPU_LINE = re.compile(r"^\s*GPU\s*(\d+)\s*:\s*(.+?)\s*$")

LINEAR_NTHREAD = re.compile(r"^nThread")  # on comment_body(line), which strips '#' and blanks
LINEAR_LSPCI_HEADER = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7])\s+"
    r"(?P<cls>[^:\s][^:]{2,59}?)\s*(?:\[[0-9a-fA-F]{4}\])?:\s*(?P<name>.*)$"
)
LINEAR_KERNEL_RELEASE = re.compile(r"Linux-(\d[^\s]{0,120}?)-(?:x86_64|aarch64|ppc64le|s390x)")
LINEAR_NCCL_PLUGIN = re.compile(
    r"^(?:P2P plugin|NET/Plugin\s*:\s*Loaded (?:net|collnet) plugin)\s*(?::\s*)?(\S(?:.*\S)?)\s*$"
)
LINEAR_AER_LAYER = re.compile(r"aer_layer=(?P<layer>[^,]{1,60}),\s*aer_agent=(?P<agent>.+)$")
LINEAR_GPU_LINE = re.compile(r"^\s*GPU\s*(\d+)\s*:\s*(\S(?:.*\S)?)\s*$")
