#!/usr/bin/env bash
# Installs the peers that bench/kernels_bench.ts measures zigtensor against, into the git-ignored bench/.peers/:
#   python/  NumPy (OpenBLAS inside its wheel) and threadpoolctl, with pip --target
#   node/    ONNX Runtime for Node (its CPU binaries ship in the npm package; the CUDA download is skipped)
#            and TensorFlow.js with its WebAssembly backend, with npm --prefix
#   tfjs-node/  @tensorflow/tfjs-node, when its install script can fetch libtensorflow (it downloads from
#            outside the npm registry, so it may fail: the bench then says so and uses the wasm backend)
#   torch/   PyTorch (pip torch, with pip --target) for bench/workloads_bench.ts: a few GB with its CUDA
#            dependencies, so ZIGTENSOR_SKIP_TORCH=1 skips it (the bench also takes ZIGTENSOR_TORCH_PYTHON,
#            a Python that already imports torch)
# Each peer is optional: one that fails to install is reported and the bench skips it with a note.
#
#   bash bench/peers.sh          install (idempotent)
#   bash bench/peers.sh clean    remove bench/.peers/
set -uo pipefail
cd "$(dirname "$0")"
PEERS=.peers

if [ "${1:-}" = clean ]; then
  rm -rf "$PEERS"
  exit 0
fi
mkdir -p "$PEERS/python" "$PEERS/node" "$PEERS/tfjs-node"
failed=()

echo "== NumPy and threadpoolctl (pip --target $PEERS/python)"
if ! python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$PEERS/python" \
  numpy threadpoolctl; then
  failed+=("numpy")
fi

echo "== ONNX Runtime for Node and TensorFlow.js (npm --prefix $PEERS/node)"
if ! ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$PEERS/node" --no-audit --no-fund --loglevel=error \
  onnxruntime-node@1.30.0 @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0; then
  failed+=("onnxruntime-node, @tensorflow/tfjs")
fi

echo "== @tensorflow/tfjs-node (optional: its install script downloads libtensorflow)"
if ! npm install --prefix "$PEERS/tfjs-node" --no-audit --no-fund --loglevel=error @tensorflow/tfjs-node@4.22.0 \
  >"$PEERS/tfjs-node-install.log" 2>&1; then
  echo "note: @tensorflow/tfjs-node did not install (see bench/$PEERS/tfjs-node-install.log); the bench uses the" \
    "TensorFlow.js WebAssembly backend instead"
fi

if [ "${ZIGTENSOR_SKIP_TORCH:-0}" = 1 ]; then
  echo "== PyTorch skipped (ZIGTENSOR_SKIP_TORCH=1)"
else
  echo "== PyTorch (pip --target $PEERS/torch; a few GB)"
  mkdir -p "$PEERS/torch"
  if ! python3 -m pip install --quiet --disable-pip-version-check --upgrade --target "$PEERS/torch" torch; then
    failed+=("torch")
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "note: could not install: ${failed[*]}; the bench skips them"
fi
echo "peers in bench/$PEERS; run: deno bench -A bench/kernels_bench.ts (and bench/workloads_bench.ts)"
