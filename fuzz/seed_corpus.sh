#!/bin/sh
# fuzz/seed_corpus.sh OUT: writes the libFuzzer seed corpora OUT/config (the real configs from
# tests/data/configs) and OUT/safetensors (small valid safetensors files: each dtype, a scalar, an
# empty tensor, __metadata__). Run from the repository root.
set -eu
out=${1:?usage: fuzz/seed_corpus.sh OUT}
mkdir -p "$out/config" "$out/safetensors"
cp tests/data/configs/*.json "$out/config/"

# st FILE HEADER DATA: 8-byte little-endian header length, the header, then DATA (printf escapes).
st() {
    n=${#2}
    printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $((n & 255)) $((n >> 8 & 255)) $((n >> 16 & 255)) \
        $((n >> 24 & 255)))\\000\\000\\000\\000" >"$out/safetensors/$1"
    printf '%s' "$2" >>"$out/safetensors/$1"
    printf "$3" >>"$out/safetensors/$1"
}
st bf16.safetensors '{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}      ' \
    '\200\077\000\300\300\077\000\000'
st dtypes.safetensors '{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"h":{"dtype":"F16","shape":[3],"data_offsets":[4,10]},"f":{"dtype":"F32","shape":[1,2],"data_offsets":[10,18]}}' \
    '\200\077\000\100\000\076\000\304\001\000\000\000\200\077\000\000\100\300'
st scalar_empty.safetensors '{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]}}' \
    '\000\000\200\077'
echo "seed corpora written to $out/config and $out/safetensors"
