#!/bin/sh
# Puts a node's GPUs on its Kubernetes node as the qgpu.io/inventory annotation
# (the node JSON as QgpuJson.writeNode writes it; the "name" inside is replaced by the node's own).
# usage: examples/node-inventory.sh NODE FILE.json
set -eu
node="$1"; file="$2"
kubectl annotate --overwrite node "$node" "qgpu.io/inventory=$(tr -d '\n' < "$file")"
