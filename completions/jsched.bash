# bash completion for jsched: commands, each command's options (read from its own
# --help, so they cannot drift), and the ids and names of your own jobs (asked of the
# daemon with `jsched ls`, on the socket given on the line if any).

# _jsched_socket: the -s/--socket argument of the words so far, as options for jsched.
_jsched_socket()
{
	local i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --socket) printf -- '--socket\n%s\n' "${COMP_WORDS[i + 1]}"; return ;;
		--socket=*) printf -- '%s\n' "${COMP_WORDS[i]}"; return ;;
		esac
	done
}

# _jsched_ids: the ids of your jobs (the newest 200), one a line.
_jsched_ids()
{
	local -a sock
	mapfile -t sock < <(_jsched_socket)
	jsched "${sock[@]}" ls -o id --no-headings --limit 200 2>/dev/null
}

# _jsched_options CMD: the options CMD's --help names.
_jsched_options()
{
	jsched $1 --help 2>/dev/null | grep -oE -- '(^|[ ,[|(])(--[a-z][a-z-]*|-[A-Za-z])([^A-Za-z-]|$)' |
		sed -E 's/^[ ,[|(]//; s/[^A-Za-z-]$//' | sort -u
}

_jsched()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-s | --socket | -C | --client-name | --reply-timeout) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	case $prev in
	-s | --socket | --batch | --stdin) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--cwd) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--priority) COMPREPLY=($(compgen -W "low normal high critical" -- "$cur")); return ;;
	--overflow) COMPREPLY=($(compgen -W "reject drop_oldest drop_newest block" -- "$cur")); return ;;
	--state) COMPREPLY=($(compgen -W "waiting queued running succeeded failed cancelled expired dropped" -- "$cur")); return ;;
	--after | --any-of) COMPREPLY=($(compgen -W "$(_jsched_ids)" -- "$cur")); return ;;
	esac
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$(_jsched_options '')" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "submit wait status cancel ls output result watch metrics top drain admin call help" -- "$cur"))
		fi
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_jsched_options "$cmd") --socket --client-name --reply-timeout" -- "$cur"))
		return
	fi
	case $cmd in
	wait | status | cancel | output | result) COMPREPLY=($(compgen -W "$(_jsched_ids)" -- "$cur")) ;;
	admin) [[ $prev == admin ]] && COMPREPLY=($(compgen -W "reload set-client shutdown" -- "$cur")) ;;
	help) COMPREPLY=($(compgen -W "submit wait status cancel ls output watch metrics top drain admin call" -- "$cur")) ;;
	call) [[ $prev == call ]] && COMPREPLY=($(compgen -W "hello submit status wait cancel list output watch unwatch metrics drain ping reload set_client shutdown" -- "$cur")) ;;
	submit) COMPREPLY=($(compgen -c -- "$cur")) ;;
	esac
}
complete -F _jsched jsched
