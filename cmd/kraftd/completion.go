package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// bashCompletion completes a kraftd command line by asking the kraftd
// being completed: urfave/cli answers --generate-bash-completion with the
// commands, or with the flags when the word begun starts with a dash.
// Nothing is offered for a flag's value, so bash falls back to file names.
const bashCompletion = `# bash completion for kraftd; load it with: source <(kraftd completion bash)
_kraftd() {
  local cur=${COMP_WORDS[COMP_CWORD]} words
  if [[ $cur == -* ]]; then
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o bashdefault -o default -F _kraftd kraftd
`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a completion script: source <(kraftd completion bash); zsh loads it after bashcompinit",
		ArgsUsage: "bash",
		Action: func(c *cli.Context) error {
			if shell := c.Args().First(); shell != "bash" {
				return cli.Exit(fmt.Sprintf("completion: shell %q: only bash is supported (zsh: autoload bashcompinit && bashcompinit first)", shell), 2)
			}
			fmt.Print(bashCompletion)
			return nil
		},
	}
}
