# Sourced by the bench/h200*.sh visit scripts: the H200 machine's set-up
# (the NVIDIA Vulkan ICD, the GL libraries carried in .gl/) and a log
# function that stamps each line with the seconds since the visit began.
#
#   . bench/h200_env.sh NAME.log
#
# OUT is the device tool's output folder (/tmp/out when run by hand).
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp PYTHONUNBUFFERED=1
LOG="$OUT/${1:?usage: . bench/h200_env.sh NAME.log}"
S=$SECONDS
log() { echo "[$((SECONDS - S))s] $*" | tee -a "$LOG"; }
