#!/bin/bash -eu
# Build every atheris target of fuzz/ for ClusterFuzzLite / OSS-Fuzz, following their Python
# conventions: install the project, then compile_python_fuzzer for each target, with its seed
# corpus zipped as <target>_seed_corpus.zip and its dictionary as <target>.dict in $OUT.
#
# The same steps run locally without the builder image as `bash .clusterfuzzlite/build.sh
# --smoke`: it imports every target and runs one input through it (tests/fuzz/test_targets.py
# does the same under pytest).

cd "${SRC:-$(pwd)}/secref-suite" 2>/dev/null || cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--smoke" ]]; then
  for target in fuzz/fuzz_*.py; do
    name=$(basename "$target" .py)
    python3 -c "import sys; from fuzz.regress import target_input; target_input(sys.argv[1])(b'{{secret:x}}')" "$name"
    echo "$name: imported and ran one input"
  done
  exit 0
fi

pip3 install .
pip3 install "hypothesis>=6.100"

for target in fuzz/fuzz_*.py; do
  name=$(basename "$target" .py)
  compile_python_fuzzer "$target" --paths "$(pwd)" --hidden-import fuzz.properties
  (cd "fuzz/corpus/$name" && zip -q -j "$OUT/${name}_seed_corpus.zip" ./*)
  cp "fuzz/dicts/$name.dict" "$OUT/$name.dict"
done
