# Shared body of the vmware-rpctool and vmtoolsd stubs: serves the RPC in
# $cmd from the files in $GUESTINFO_DIR. Sourced, not run.
case $cmd in
"info-get "*)
	key=${cmd#info-get }
	case $key in */* | "") echo "No value found" >&2; exit 1 ;; esac
	if [ -e "$GUESTINFO_DIR/$key.noout" ]; then
		exit 0
	fi
	if [ -f "$GUESTINFO_DIR/$key.fail-$tool" ]; then
		cat "$GUESTINFO_DIR/$key.fail-$tool" >&2
		exit 1
	fi
	if [ -e "$GUESTINFO_DIR/$key.hang-$tool" ]; then
		exec sleep 60
	fi
	if [ ! -f "$GUESTINFO_DIR/$key" ]; then
		echo "No value found" >&2
		exit 1
	fi
	cat "$GUESTINFO_DIR/$key"
	echo
	exit 0
	;;
"info-set "*)
	rest=${cmd#info-set }
	key=${rest%% *}
	val=${rest#* }
	case $key in */* | "") echo "Invalid key" >&2; exit 1 ;; esac
	if [ -f "$GUESTINFO_DIR/$key.fail-$tool" ]; then
		cat "$GUESTINFO_DIR/$key.fail-$tool" >&2
		exit 1
	fi
	if [ -e "$GUESTINFO_DIR/$key.hang-$tool" ]; then
		exec sleep 60
	fi
	printf '%s' "$val" >"$GUESTINFO_DIR/$key"
	echo
	exit 0
	;;
"deployPkg.update.state "*)
	# A customization report: recorded in the call log, answered.
	echo
	exit 0
	;;
*)
	echo "Unknown command" >&2
	exit 1
	;;
esac
