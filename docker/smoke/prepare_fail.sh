# Stub prepare script that fails: the entrypoint must stop with its status (7).
echo "prepare_fail.sh: failing on purpose" >&2
exit 7
