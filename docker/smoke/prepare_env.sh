# Stub PAI-DLC prepare script for smoke.sh: the entrypoint sources it and passes its exports on.
export TZRUN_SMOKE_PREPARED=from-prepare-script
