#!/bin/sh
# Install what hipath needs on Debian/Ubuntu, only the packages that are missing.
# Called by `make`; safe to run again.
set -e
PKGS="build-essential pkg-config libpcre2-dev libutf8proc-dev libcjson-dev \
libsqlite3-dev sqlite3 libprotobuf-c-dev protobuf-c-compiler protobuf-compiler \
libmicrohttpd-dev zlib1g-dev libcurl4-openssl-dev libcmocka-dev curl \
python3-matplotlib"
# node, npm and python3 may come from elsewhere (nvm, pyenv): check the commands.
# python3-matplotlib draws the labs' charts (labs/plot.py), with Debian's python3
# when the one on PATH lacks it.
command -v python3 >/dev/null || PKGS="$PKGS python3 python3-pip"
command -v node >/dev/null || PKGS="$PKGS nodejs"
command -v npm >/dev/null || PKGS="$PKGS npm"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $missing >/dev/null
