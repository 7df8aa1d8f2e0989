# bash completion for kctl. Generated from the command tree by `python -m kctl.devtools gen-docs`; do not edit.

declare -gA __kctl_known __kctl_aliases __kctl_subs __kctl_opts __kctl_value_opts __kctl_choices __kctl_argchoices
__kctl_known=(
    ['kctl']='1'
    ['kctl broker']='1'
    ['kctl broker balance']='1'
    ['kctl broker list']='1'
    ['kctl broker log-dirs']='1'
    ['kctl cluster']='1'
    ['kctl cluster health']='1'
    ['kctl cluster info']='1'
    ['kctl completion']='1'
    ['kctl config']='1'
    ['kctl config alter']='1'
    ['kctl config describe']='1'
    ['kctl context']='1'
    ['kctl context delete']='1'
    ['kctl context list']='1'
    ['kctl context set']='1'
    ['kctl context show']='1'
    ['kctl context use']='1'
    ['kctl group']='1'
    ['kctl local']='1'
    ['kctl offset']='1'
    ['kctl offset get']='1'
    ['kctl partition']='1'
    ['kctl partition list']='1'
    ['kctl record']='1'
    ['kctl record delete']='1'
    ['kctl replication']='1'
    ['kctl replication elect-leaders']='1'
    ['kctl replication reassign']='1'
    ['kctl replication reassign cancel']='1'
    ['kctl replication reassign execute']='1'
    ['kctl replication reassign generate']='1'
    ['kctl replication reassign list']='1'
    ['kctl replication reassign verify']='1'
    ['kctl spark']='1'
    ['kctl topic']='1'
    ['kctl topic add-partitions']='1'
    ['kctl topic alter-config']='1'
    ['kctl topic create']='1'
    ['kctl topic delete']='1'
    ['kctl topic describe']='1'
    ['kctl topic list']='1'
    ['kctl topic set-replication-factor']='1'
)
__kctl_aliases=(
    ['kctl broker|ls']='list'
    ['kctl cluster|describe']='info'
    ['kctl context|ls']='list'
    ['kctl context|rm']='delete'
    ['kctl partition|ls']='list'
    ['kctl topic|ls']='list'
    ['kctl topic|rm']='delete'
    ['kctl|brokers']='broker'
    ['kctl|clusters']='cluster'
    ['kctl|configs']='config'
    ['kctl|contexts']='context'
    ['kctl|groups']='group'
    ['kctl|offsets']='offset'
    ['kctl|partitions']='partition'
    ['kctl|records']='record'
    ['kctl|topics']='topic'
)
__kctl_subs=(
    ['kctl']='cluster broker topic partition replication config group offset record local spark context completion'
    ['kctl broker']='balance list log-dirs'
    ['kctl cluster']='health info'
    ['kctl config']='alter describe'
    ['kctl context']='delete list set show use'
    ['kctl offset']='get'
    ['kctl partition']='list'
    ['kctl record']='delete'
    ['kctl replication']='elect-leaders reassign'
    ['kctl replication reassign']='cancel execute generate list verify'
    ['kctl topic']='add-partitions alter-config create delete describe list set-replication-factor'
)
__kctl_opts=(
    ['kctl']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout --version -X -b -h -o -q'
    ['kctl broker']='--help -h'
    ['kctl broker balance']='--bootstrap-server --context --debug --help --internal --no-headers --output --quiet --timeout -X -b -h -i -o -q'
    ['kctl broker list']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl broker log-dirs']='--bootstrap-server --broker --context --debug --help --no-headers --output --quiet --replicas --timeout --topic -X -b -h -o -q -t'
    ['kctl cluster']='--help -h'
    ['kctl cluster health']='--bootstrap-server --context --debug --exit-when-healthy --help --interval --max-wait --no-headers --output --quiet --timeout --watch -X -b -h -o -q -w'
    ['kctl cluster info']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl completion']='--help -h'
    ['kctl config']='--help -h'
    ['kctl config alter']='--append --bootstrap-server --context --debug --delete --dry-run --help --no-headers --output --quiet --set --subtract --timeout -X -b -h -o -q'
    ['kctl config describe']='--all --bootstrap-server --context --debug --help --key --no-headers --output --quiet --timeout -X -a -b -h -k -o -q'
    ['kctl context']='--help -h'
    ['kctl context delete']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout --yes -X -b -h -o -q -y'
    ['kctl context list']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl context set']='--bootstrap-server --help --timeout --unset --use -X -b -h'
    ['kctl context show']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl context use']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl group']='--help -h'
    ['kctl local']='--help -h'
    ['kctl offset']='--help -h'
    ['kctl offset get']='--at --bootstrap-server --context --debug --help --isolation --max-timestamp --no-headers --output --quiet --regex --timeout -X -b -h -o -q -r'
    ['kctl partition']='--help -h'
    ['kctl partition list']='--at-min-isr --bootstrap-server --context --debug --help --internal --leader --no-headers --offline --output --quiet --regex --timeout --unavailable --under-min-isr --under-replicated -X -b -h -i -o -q -r'
    ['kctl record']='--help -h'
    ['kctl record delete']='--before --bootstrap-server --context --debug --dry-run --help --no-headers --output --quiet --timeout --yes -X -b -h -o -q -y'
    ['kctl replication']='--help -h'
    ['kctl replication elect-leaders']='--all --bootstrap-server --context --debug --help --no-headers --output --preferred --quiet --timeout --unclean --yes -X -b -h -o -q -y'
    ['kctl replication reassign']='--help -h'
    ['kctl replication reassign cancel']='--all --bootstrap-server --context --debug --help --no-headers --output --quiet --timeout --yes -X -b -h -o -q -y'
    ['kctl replication reassign execute']='--bootstrap-server --context --debug --dry-run --help --no-headers --no-wait --output --quiet --rollback-out --throttle --timeout --wait --wait-timeout --yes -X -b -h -o -q -y'
    ['kctl replication reassign generate']='--bootstrap-server --brokers --context --debug --disable-rack-aware --help --no-headers --output --quiet --replication-factor --rf --rollback-out --timeout --topic -X -b -h -o -q -t'
    ['kctl replication reassign list']='--bootstrap-server --context --debug --help --no-headers --output --quiet --timeout -X -b -h -o -q'
    ['kctl replication reassign verify']='--bootstrap-server --context --debug --help --no-headers --output --preserve-throttles --quiet --timeout -X -b -h -o -q'
    ['kctl spark']='--help -h'
    ['kctl topic']='--help -h'
    ['kctl topic add-partitions']='--add --bootstrap-server --context --debug --dry-run --help --no-headers --output --quiet --replica-assignment --timeout --to -X -b -h -o -q'
    ['kctl topic alter-config']='--append --bootstrap-server --context --debug --delete --dry-run --help --no-headers --output --quiet --set --subtract --timeout -X -b -h -o -q'
    ['kctl topic create']='--bootstrap-server --config --context --debug --dry-run --help --if-not-exists --no-headers --output --partitions --quiet --replica-assignment --replication-factor --rf --timeout -X -b -c -h -o -p -q'
    ['kctl topic delete']='--bootstrap-server --context --debug --help --if-exists --no-headers --output --quiet --regex --timeout --yes -X -b -h -o -q -r -y'
    ['kctl topic describe']='--bootstrap-server --context --debug --detail --help --no-headers --output --quiet --timeout -X -b -d -h -o -q'
    ['kctl topic list']='--at-min-isr --bootstrap-server --context --debug --help --internal --no-headers --offline --output --overrides --quiet --regex --timeout --unavailable --under-min-isr --under-replicated --with-overrides -X -b -h -i -o -q -r'
    ['kctl topic set-replication-factor']='--bootstrap-server --context --debug --dry-run --help --no-headers --no-wait --output --quiet --throttle --timeout --wait --wait-timeout -X -b -h -o -q'
)
__kctl_value_opts=(
    ['kctl']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl broker balance']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl broker list']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl broker log-dirs']=' --bootstrap-server --broker --context --output --timeout --topic -X -b -o -t '
    ['kctl cluster health']=' --bootstrap-server --context --interval --max-wait --output --timeout -X -b -o '
    ['kctl cluster info']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl config alter']=' --append --bootstrap-server --context --delete --output --set --subtract --timeout -X -b -o '
    ['kctl config describe']=' --bootstrap-server --context --key --output --timeout -X -b -k -o '
    ['kctl context delete']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl context list']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl context set']=' --bootstrap-server --timeout --unset -X -b '
    ['kctl context show']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl context use']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl offset get']=' --at --bootstrap-server --context --isolation --output --regex --timeout -X -b -o -r '
    ['kctl partition list']=' --bootstrap-server --context --leader --output --regex --timeout -X -b -o -r '
    ['kctl record delete']=' --before --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl replication elect-leaders']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl replication reassign cancel']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl replication reassign execute']=' --bootstrap-server --context --output --rollback-out --throttle --timeout --wait-timeout -X -b -o '
    ['kctl replication reassign generate']=' --bootstrap-server --brokers --context --output --replication-factor --rf --rollback-out --timeout --topic -X -b -o -t '
    ['kctl replication reassign list']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl replication reassign verify']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl topic add-partitions']=' --add --bootstrap-server --context --output --replica-assignment --timeout --to -X -b -o '
    ['kctl topic alter-config']=' --append --bootstrap-server --context --delete --output --set --subtract --timeout -X -b -o '
    ['kctl topic create']=' --bootstrap-server --config --context --output --partitions --replica-assignment --replication-factor --rf --timeout -X -b -c -o -p '
    ['kctl topic delete']=' --bootstrap-server --context --output --regex --timeout -X -b -o -r '
    ['kctl topic describe']=' --bootstrap-server --context --output --timeout -X -b -o '
    ['kctl topic list']=' --bootstrap-server --context --output --regex --timeout -X -b -o -r '
    ['kctl topic set-replication-factor']=' --bootstrap-server --context --output --throttle --timeout --wait-timeout -X -b -o '
)
__kctl_choices=(
    ['kctl broker balance|--context']='@context'
    ['kctl broker balance|--output']='auto table wide plain json jsonl csv'
    ['kctl broker balance|-o']='auto table wide plain json jsonl csv'
    ['kctl broker list|--context']='@context'
    ['kctl broker list|--output']='auto table wide plain json jsonl csv'
    ['kctl broker list|-o']='auto table wide plain json jsonl csv'
    ['kctl broker log-dirs|--context']='@context'
    ['kctl broker log-dirs|--output']='auto table wide plain json jsonl csv'
    ['kctl broker log-dirs|-o']='auto table wide plain json jsonl csv'
    ['kctl cluster health|--context']='@context'
    ['kctl cluster health|--output']='auto table wide plain json jsonl csv'
    ['kctl cluster health|-o']='auto table wide plain json jsonl csv'
    ['kctl cluster info|--context']='@context'
    ['kctl cluster info|--output']='auto table wide plain json jsonl csv'
    ['kctl cluster info|-o']='auto table wide plain json jsonl csv'
    ['kctl config alter|--context']='@context'
    ['kctl config alter|--output']='auto table wide plain json jsonl csv'
    ['kctl config alter|-o']='auto table wide plain json jsonl csv'
    ['kctl config describe|--context']='@context'
    ['kctl config describe|--output']='auto table wide plain json jsonl csv'
    ['kctl config describe|-o']='auto table wide plain json jsonl csv'
    ['kctl context delete|--context']='@context'
    ['kctl context delete|--output']='auto table wide plain json jsonl csv'
    ['kctl context delete|-o']='auto table wide plain json jsonl csv'
    ['kctl context list|--context']='@context'
    ['kctl context list|--output']='auto table wide plain json jsonl csv'
    ['kctl context list|-o']='auto table wide plain json jsonl csv'
    ['kctl context show|--context']='@context'
    ['kctl context show|--output']='auto table wide plain json jsonl csv'
    ['kctl context show|-o']='auto table wide plain json jsonl csv'
    ['kctl context use|--context']='@context'
    ['kctl context use|--output']='auto table wide plain json jsonl csv'
    ['kctl context use|-o']='auto table wide plain json jsonl csv'
    ['kctl offset get|--context']='@context'
    ['kctl offset get|--isolation']='read_uncommitted read_committed'
    ['kctl offset get|--output']='auto table wide plain json jsonl csv'
    ['kctl offset get|-o']='auto table wide plain json jsonl csv'
    ['kctl partition list|--context']='@context'
    ['kctl partition list|--output']='auto table wide plain json jsonl csv'
    ['kctl partition list|-o']='auto table wide plain json jsonl csv'
    ['kctl record delete|--context']='@context'
    ['kctl record delete|--output']='auto table wide plain json jsonl csv'
    ['kctl record delete|-o']='auto table wide plain json jsonl csv'
    ['kctl replication elect-leaders|--context']='@context'
    ['kctl replication elect-leaders|--output']='auto table wide plain json jsonl csv'
    ['kctl replication elect-leaders|-o']='auto table wide plain json jsonl csv'
    ['kctl replication reassign cancel|--context']='@context'
    ['kctl replication reassign cancel|--output']='auto table wide plain json jsonl csv'
    ['kctl replication reassign cancel|-o']='auto table wide plain json jsonl csv'
    ['kctl replication reassign execute|--context']='@context'
    ['kctl replication reassign execute|--output']='auto table wide plain json jsonl csv'
    ['kctl replication reassign execute|-o']='auto table wide plain json jsonl csv'
    ['kctl replication reassign generate|--context']='@context'
    ['kctl replication reassign generate|--output']='auto table wide plain json jsonl csv'
    ['kctl replication reassign generate|-o']='auto table wide plain json jsonl csv'
    ['kctl replication reassign list|--context']='@context'
    ['kctl replication reassign list|--output']='auto table wide plain json jsonl csv'
    ['kctl replication reassign list|-o']='auto table wide plain json jsonl csv'
    ['kctl replication reassign verify|--context']='@context'
    ['kctl replication reassign verify|--output']='auto table wide plain json jsonl csv'
    ['kctl replication reassign verify|-o']='auto table wide plain json jsonl csv'
    ['kctl topic add-partitions|--context']='@context'
    ['kctl topic add-partitions|--output']='auto table wide plain json jsonl csv'
    ['kctl topic add-partitions|-o']='auto table wide plain json jsonl csv'
    ['kctl topic alter-config|--context']='@context'
    ['kctl topic alter-config|--output']='auto table wide plain json jsonl csv'
    ['kctl topic alter-config|-o']='auto table wide plain json jsonl csv'
    ['kctl topic create|--context']='@context'
    ['kctl topic create|--output']='auto table wide plain json jsonl csv'
    ['kctl topic create|-o']='auto table wide plain json jsonl csv'
    ['kctl topic delete|--context']='@context'
    ['kctl topic delete|--output']='auto table wide plain json jsonl csv'
    ['kctl topic delete|-o']='auto table wide plain json jsonl csv'
    ['kctl topic describe|--context']='@context'
    ['kctl topic describe|--output']='auto table wide plain json jsonl csv'
    ['kctl topic describe|-o']='auto table wide plain json jsonl csv'
    ['kctl topic list|--context']='@context'
    ['kctl topic list|--output']='auto table wide plain json jsonl csv'
    ['kctl topic list|-o']='auto table wide plain json jsonl csv'
    ['kctl topic set-replication-factor|--context']='@context'
    ['kctl topic set-replication-factor|--output']='auto table wide plain json jsonl csv'
    ['kctl topic set-replication-factor|-o']='auto table wide plain json jsonl csv'
    ['kctl|--context']='@context'
    ['kctl|--output']='auto table wide plain json jsonl csv'
    ['kctl|-o']='auto table wide plain json jsonl csv'
)
__kctl_argchoices=(
    ['kctl completion']='bash zsh fish'
    ['kctl config alter']='topic broker broker-default broker-logger'
    ['kctl config describe']='topic broker broker-default broker-logger'
    ['kctl context delete']='@context'
    ['kctl context set']='@context'
    ['kctl context show']='@context'
    ['kctl context use']='@context'
)

__kctl_contexts() {
    local file="${KCTL_CONFIG:-${XDG_CONFIG_HOME:-$HOME/.config}/kctl/config.toml}"
    [ -r "$file" ] && sed -n -e 's/^\[contexts\."\([^"]*\)"\][[:space:]]*$/\1/p' -e 's/^\[contexts\.\([A-Za-z0-9_-]*\)\][[:space:]]*$/\1/p' "$file"
}

__kctl_candidates() {
    local cur="$1" prev="$2" path="kctl" word next skip=0 found=""
    shift 2
    for word in "$@"; do
        if (( skip )); then skip=0; continue; fi
        if [[ "$word" == -* ]]; then
            [[ "$word" != *=* && "${__kctl_value_opts[$path]}" == *" $word "* ]] && skip=1
            continue
        fi
        word="${__kctl_aliases[$path|$word]:-$word}"
        next="$path $word"
        [[ -n "${__kctl_known[$next]}" ]] && path="$next"
    done
    if [[ "$prev" == -* && "${__kctl_value_opts[$path]}" == *" $prev "* ]]; then
        found="${__kctl_choices[$path|$prev]}"
    elif [[ "$cur" == -* ]]; then
        found="${__kctl_opts[$path]}"
    elif [[ -n "${__kctl_subs[$path]}" ]]; then
        found="${__kctl_subs[$path]}"
    else
        found="${__kctl_argchoices[$path]}"
    fi
    if [[ "$found" == "@context" ]]; then
        __kctl_contexts
    elif [[ -n "$found" ]]; then
        printf '%s\n' $found
    fi
}

_kctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev=""
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    local words
    words="$(__kctl_candidates "$cur" "$prev" "${COMP_WORDS[@]:1:COMP_CWORD-1}")"
    COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -F _kctl kctl
