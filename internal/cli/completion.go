package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// A Command is a command line the shell completion completes: the words
// after "plantstore" that name it (none for the server itself), its flags
// and the words it takes as arguments, if a fixed set.
type Command struct {
	Words []string
	Flags []string
	Args  []string
}

// FlagNames are fs's flags as a command line writes them: --name, or -o
// for a one-letter flag.
func FlagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) == 1 {
			names = append(names, "-"+f.Name)
		} else {
			names = append(names, "--"+f.Name)
		}
	})
	return names
}

// Commands are the client commands, with their flags, for completion.
func Commands() []Command {
	none := func(string) string { return "" }
	cmds := []Command{{Words: []string{"plants"}, Args: append([]string{"help"}, plantsVerbs...)}}
	for _, verb := range plantsVerbs {
		fs, _ := newPlantsFlags(verb, none)
		cmds = append(cmds, Command{Words: []string{"plants", verb}, Flags: FlagNames(fs)})
	}
	cmds = append(cmds, Command{Words: []string{"webhooks"}, Args: append([]string{"help"}, webhooksVerbs...)})
	for _, verb := range webhooksVerbs {
		fs, _ := newWebhooksFlags(verb, none)
		cmds = append(cmds, Command{Words: []string{"webhooks", verb}, Flags: FlagNames(fs)})
	}
	exportFS, _ := newExportFlags(none)
	importFS, _ := newImportFlags(none)
	return append(cmds,
		Command{Words: []string{"export"}, Flags: FlagNames(exportFS)},
		Command{Words: []string{"import"}, Flags: FlagNames(importFS)})
}

// Shells are the shells Completion writes a script for.
var Shells = []string{"bash", "zsh"}

// Completion writes the completion script of shell for commands: after a
// command's words it offers the words that continue it (subcommands, or
// its fixed arguments), or its flags for a word that starts with "-".
func Completion(w io.Writer, shell string, commands []Command) error {
	// The words and the flags completed after each command line, keyed by
	// the line.
	words, flags := map[string][]string{}, map[string][]string{}
	var lines []string
	for _, c := range commands {
		line := strings.Join(c.Words, " ")
		if len(c.Words) > 0 {
			parent, last := strings.Join(c.Words[:len(c.Words)-1], " "), c.Words[len(c.Words)-1]
			if !slices.Contains(words[parent], last) {
				words[parent] = append(words[parent], last)
			}
		}
		words[line] = append(words[line], c.Args...)
		flags[line] = append(flags[line], c.Flags...)
		lines = append(lines, line)
	}
	var cases, known strings.Builder
	for _, line := range lines {
		fmt.Fprintf(&cases, "    %s) offer=%s flags=%s ;;\n", shellQuote(line),
			shellQuote(strings.Join(words[line], " ")), shellQuote(strings.Join(flags[line], " ")))
		if line != "" {
			fmt.Fprintf(&known, "|%s", shellQuote(line))
		}
	}
	knownLines := strings.TrimPrefix(known.String(), "|")
	switch shell {
	case "bash":
		_, err := fmt.Fprintf(w, bashScript, knownLines, cases.String())
		return err
	case "zsh":
		_, err := fmt.Fprintf(w, zshScript, knownLines, cases.String())
		return err
	}
	return fmt.Errorf("no completion for shell %q: want %s", shell, strings.Join(Shells, " or "))
}

// shellQuote quotes s for bash and zsh alike.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The scripts find the command line typed so far (the words that name a
// known command, flags and their values skipped) and offer what follows it.
const bashScript = `# bash completion for plantstore; load it with
#   source <(plantstore completion bash)
_plantstore() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmdline="" next word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    next="${cmdline:+$cmdline }$word"
    case "$next" in
    %s) cmdline=$next ;;
    esac
  done
  local offer="" flags=""
  case "$cmdline" in
%s  esac
  [[ $cur == -* ]] && offer=$flags
  COMPREPLY=($(compgen -W "$offer" -- "$cur"))
}
complete -F _plantstore plantstore
`

const zshScript = `#compdef plantstore
# zsh completion for plantstore; save it as _plantstore in a directory of
# $fpath, or load it with: source <(plantstore completion zsh)
_plantstore() {
  local cmdline="" next word i
  for ((i = 2; i < CURRENT; i++)); do
    word=${words[i]}
    next="${cmdline:+$cmdline }$word"
    case "$next" in
    %s) cmdline=$next ;;
    esac
  done
  local offer="" flags=""
  case "$cmdline" in
%s  esac
  [[ ${words[CURRENT]} == -* ]] && offer=$flags
  compadd -- ${=offer}
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _plantstore "$@"
else
  compdef _plantstore plantstore
fi
`
