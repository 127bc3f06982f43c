# Sourced by scripts/setup.sh and scripts/check_pip_install.sh: `cmd 2>&1 | progress LOG` shows
# the wheel build's own lines (ri-build:, scripts/native_build.py) as they come and, after 8 s
# without one, a line with the time and pip's latest step; the whole output goes to LOG.
progress() {
  local log=$1 start=$SECONDS last=$SECONDS step="starting" line status
  while true; do
    if IFS= read -r -t 2 line; then
      echo "$line" >>"$log"
      case "$line" in
        *ri-build:*) echo "      ${line#*ri-build: }"; last=$SECONDS ;;
        *Collecting*|*Downloading*|*"Using cached"*|*"Requirement already"*|*"build dependencies"*\
        |*"Getting requirements"*|*"Preparing metadata"*|*"Building wheel"*|*"Created wheel"*)
          step=$(echo "$line" | sed 's/^ *//' | cut -c1-70) ;;
        "Installing collected packages"*)
          step="installing $(echo "$line" | tr ',' '\n' | wc -l) package(s)"
          echo "      $step"; last=$SECONDS ;;
        ERROR:*|error:*) echo "      $line" ;;
      esac
    else
      status=$?
      [ "$status" -gt 128 ] || break            # end of input (not a time-out)
    fi
    if [ $((SECONDS - last)) -ge 8 ]; then
      echo "      ... $((SECONDS - start)) s: $step"
      last=$SECONDS
    fi
  done
}

# `heartbeat CMD ARGS...`: run CMD, print a line every 8-9 s while it runs; CMD's exit status.
heartbeat() {
  local start=$SECONDS last=$SECONDS pid
  "$@" <&0 &                    # (stdin kept: a here-document)
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - last)) -ge 8 ]; then
      echo "      ... $((SECONDS - start)) s"
      last=$SECONDS
    fi
  done
  wait "$pid"
}
