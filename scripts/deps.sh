#!/usr/bin/env bash
# scripts/deps.sh: installs the Debian packages sparkgate builds and tests with, when missing.
# Used by the README's commands and by CI; a no-op on a machine that has them all.
set -euo pipefail
packages=(build-essential cmake pkg-config libopenblas-dev libcjson-dev libssl-dev check lcov)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "sparkgate: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
