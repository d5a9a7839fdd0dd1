#!/usr/bin/env bash
# Checks the three ways pcidoc is installed on GPU boxes (issue 20), in scratch folders:
#   1. `pip install .` into an environment that already holds another pydantic 2.x: that pydantic
#      must stay, and reports must be byte-identical to the ones of the development environment;
#   2. `pipx install .` (an isolated tool environment);
#   3. `uv tool install .`.
# Needs the package registry (not part of the test suite). Usage: tools/check_install.sh [PYDANTIC...]
# Prints one line per check and exits non-zero when one fails.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PYDANTICS=("${@:-2.7.4 2.9.2 2.11.10}")
read -r -a PYDANTICS <<<"${PYDANTICS[*]}"
REF_PY="${REF_PY:-$ROOT/.venv/bin/python}"
failed=0
say() { printf '%-58s %s\n' "$1" "$2"; }
norm() { grep -v -E '"(generated_at|created_at|captured_at)"'; }
reference() { "$REF_PY" -m pcidoc check --json --demo "$1" | norm; }

for version in "${PYDANTICS[@]}"; do
  env="$WORK/pydantic-$version"
  python3 -m venv "$env" && "$env/bin/pip" install -q "pydantic==$version" >/dev/null 2>&1
  "$env/bin/pip" install -q "$ROOT" >/dev/null 2>&1 || { say "pip install into pydantic $version" FAIL; failed=1; continue; }
  kept="$("$env/bin/python" -c 'import pydantic; print(pydantic.VERSION)')"
  [ "$kept" = "$version" ] || { say "pydantic $version kept" "FAIL (now $kept)"; failed=1; }
  same=ok
  for sample in h800-8gpu-hgx rtx4090-8gpu-pcie synthetic-72gpu; do
    if ! diff -q <("$env/bin/pcidoc" check --json --demo "$sample" 2>"$WORK/err" | norm) \
      <(reference "$sample") >/dev/null || [ -s "$WORK/err" ]; then
      same="FAIL ($sample differs or warned: $(head -c 200 "$WORK/err"))"
      failed=1
    fi
  done
  say "pip install . beside pydantic $version (kept $kept): reports" "$same"
  rm -rf "$env"
done

tools="$WORK/tools"
python3 -m venv "$tools" && "$tools/bin/pip" install -q pipx uv >/dev/null 2>&1
export PIPX_HOME="$WORK/pipx" PIPX_BIN_DIR="$WORK/pipx-bin"
tool_check() {  # NAME BIN: the installed command runs a diagnosis (exit 0, 1 or 2)
  "$2" check --demo >/dev/null 2>&1
  local code=$?
  if [ "$code" -le 2 ]; then say "$1" ok; else say "$1" "FAIL (exit $code)"; failed=1; fi
}
if "$tools/bin/pipx" install -q "$ROOT" >/dev/null 2>&1; then
  tool_check "pipx install ." "$PIPX_BIN_DIR/pcidoc"
else
  say "pipx install ." "FAIL (install)"; failed=1
fi
export UV_TOOL_DIR="$WORK/uv-tools" UV_TOOL_BIN_DIR="$WORK/uv-bin" UV_CACHE_DIR="$WORK/uv-cache"
if "$tools/bin/uv" tool install -q "$ROOT" >/dev/null 2>&1; then
  tool_check "uv tool install ." "$UV_TOOL_BIN_DIR/pcidoc"
else
  say "uv tool install ." "FAIL (install)"; failed=1
fi
exit "$failed"
