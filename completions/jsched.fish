# fish completion for jsched: commands, each command's options (read from its own
# --help, so they cannot drift), and the ids of your own jobs with their state and name
# (asked of the daemon with `jsched ls`).

function __jsched_ids
    jsched ls -o id,state,name --no-headings --limit 200 2>/dev/null | string replace -r '^\s*(\S+)\s+(.*)$' '$1\t$2'
end

function __jsched_options
    jsched $argv --help 2>/dev/null | string match -ar -- '(?:^|[ ,\[|(])(--[a-z][a-z-]*|-[A-Za-z])(?:[^A-Za-z-]|$)' | string match -r -- '^(--[a-z][a-z-]*|-[A-Za-z])$' | sort -u
end

set -l __jsched_commands submit wait status cancel ls output result watch metrics top drain admin call help
complete -c jsched -f
complete -c jsched -n "not __fish_seen_subcommand_from $__jsched_commands" -a "$__jsched_commands"
complete -c jsched -n "not __fish_seen_subcommand_from $__jsched_commands" -a "(__jsched_options)"
for c in $__jsched_commands
    complete -c jsched -n "__fish_seen_subcommand_from $c; and string match -q -- '-*' (commandline -ct)" -a "(__jsched_options $c)"
end
complete -c jsched -n "__fish_seen_subcommand_from wait status cancel output result" -a "(__jsched_ids)"
complete -c jsched -n "__fish_seen_subcommand_from admin" -a "reload set-client shutdown"
complete -c jsched -n "__fish_seen_subcommand_from submit" -a "(__fish_complete_subcommand)"
