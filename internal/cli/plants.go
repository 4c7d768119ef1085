package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/modules/plants/entitytag"
)

// plantsVerbs are the verbs of `plantstore plants`, in the usage's order.
var plantsVerbs = []string{"create", "get", "list", "update", "delete", "watch"}

const plantsUsage = "usage: plantstore plants create|get|list|update|delete|watch [flags]"

// plantsSynopses are each verb's usage line and what it does.
var plantsSynopses = map[string]string{
	"create": "plantstore plants create ID --name NAME [--tag TAG] [flags]\n\nCreates a plant; 409 when the id holds a different one.\n" +
		"A negative id goes after --: plantstore plants create --name NAME -- -5.",
	"get": "plantstore plants get ID [flags]\n\nPrints a plant with its ETag (for --if-match).",
	"list": "plantstore plants list [--tag TAG] [--limit N [--after ID]] [flags]\n\n" +
		"Prints every plant (or those with exactly the tag), walking all the pages.\n" +
		"With --limit (or --after) it prints one page: at most N plants, those after\n" +
		"id ID; while more remain, stderr says the command for the next page.",
	"update": "plantstore plants update ID --name NAME [--tag TAG | --no-tag] [--if-match ETAG] [flags]\n\n" +
		"Renames a plant; its tag is kept unless --tag or --no-tag says otherwise.\n" +
		"--tag replaces the tag (--tag '' is the empty tag), --no-tag removes it. Keeping\n" +
		"the tag reads the plant first and replaces only the version read, so that a\n" +
		"change made meanwhile is not overwritten (412 Precondition Failed).\n" +
		ifMatchHelp,
	"delete": "plantstore plants delete ID [--if-match ETAG] [flags]\n\nDeletes a plant.\n" + ifMatchHelp,
	"watch":  watchSynopsis,
}

// ifMatchHelp says what --if-match takes, in update's and delete's usage.
const ifMatchHelp = "--if-match takes the etag that get prints (\"abc...\", quotes included; without\n" +
	"them it is quoted for you), a list of them, or \"*\" (any stored version)."

// plantsSummaries are each verb's line in `plantstore plants --help`.
var plantsSummaries = map[string]string{
	"create": "Creates a plant; 409 when the id holds a different one.",
	"get":    "Prints a plant with its ETag (for --if-match).",
	"list":   "Prints every plant (or those with the tag), or one page with --limit.",
	"update": "Renames a plant; its tag is kept unless --tag or --no-tag says otherwise.",
	"delete": "Deletes a plant.",
	"watch":  "Prints each change as it commits, one JSON line each, until interrupted.",
}

// takesID reports whether the command (its flag set's name) takes a plant
// id as its argument.
func takesID(command string) bool {
	switch command {
	case "plants create", "plants get", "plants update", "plants delete":
		return true
	}
	return false
}

// plantsFlags are the values of a plants verb's flags.
type plantsFlags struct {
	common
	name, tag, ifMatch string
	noTag              bool
	limit              int           // list
	afterID            int64         // list
	after              string        // watch
	wait               time.Duration // watch
	types              string        // watch
	snapshot           bool          // watch
}

// newPlantsFlags defines the flags of `plantstore plants verb`; nil for an
// unknown verb.
func newPlantsFlags(verb string, getenv func(string) string) (*flag.FlagSet, *plantsFlags) {
	if !slices.Contains(plantsVerbs, verb) {
		return nil, nil
	}
	fs := flag.NewFlagSet("plants "+verb, flag.ContinueOnError)
	f := &plantsFlags{}
	switch verb {
	case "create":
		fs.StringVar(&f.name, "name", "", "the plant's name (required)")
		fs.StringVar(&f.tag, "tag", "", "the plant's tag (none when not given)")
	case "update":
		fs.StringVar(&f.name, "name", "", "the plant's new name (required)")
		fs.StringVar(&f.tag, "tag", "", "the plant's new tag (the stored one is kept when not given)")
		fs.BoolVar(&f.noTag, "no-tag", false, "remove the plant's tag")
		fs.StringVar(&f.ifMatch, "if-match", "", "update only while the plant has this ETag (get's etag; quoted for you when bare), or \"*\"")
	case "delete":
		fs.StringVar(&f.ifMatch, "if-match", "", "delete only while the plant has this ETag (get's etag; quoted for you when bare), or \"*\"")
	case "list":
		fs.IntVar(&f.limit, "limit", 0, "print one page of at most this many plants (1 to 1000)")
		fs.Int64Var(&f.afterID, "after", 0, "print one page of the plants after this id (a page's last)")
		fs.StringVar(&f.tag, "tag", "", "only plants with exactly this tag")
	case "watch":
		fs.StringVar(&f.after, "after", "", "print the changes after this cursor (a printed line's); default: from now")
		fs.DurationVar(&f.wait, "wait", client.DefaultChangesWait, "how long each request waits for a change (at most 60s)")
		fs.StringVar(&f.tag, "tag", "", "only the changes of the plants with exactly this tag (one leaving it comes as plant.deleted)")
		fs.StringVar(&f.types, "types", "", "only the changes of these types, comma-separated: plant.created, plant.updated, plant.deleted")
		fs.BoolVar(&f.snapshot, "snapshot", false, "first every current plant (of --tag) as plant.created, then the changes")
	}
	f.register(fs, getenv)
	switch verb {
	case "create", "get", "list", "update":
		f.registerOutput(fs)
	}
	return fs, f
}

// plantsHelp is the text of `plantstore plants --help`.
func plantsHelp() string {
	var b strings.Builder
	b.WriteString(plantsUsage + "\n\nThe plants of the API at --url (or $PLANTSTORE_URL). create, get, list and update\n" +
		"print JSON, or a table with -o table.\n\n")
	for _, verb := range plantsVerbs {
		synopsis, _, _ := strings.Cut(plantsSynopses[verb], "\n\n")
		fmt.Fprintf(&b, "  %s\n      %s\n", synopsis, plantsSummaries[verb])
	}
	b.WriteString("\nplantstore plants VERB --help (or plantstore help plants VERB) lists a verb's flags.\n")
	return b.String()
}

// runPlants is `plantstore plants <verb>`.
func runPlants(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		return usageError(stdio.Stderr, "plants", errors.New(plantsUsage))
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "-h", "-help", "--help", "help":
		if verb == "help" && len(args) > 0 { // plants help VERB: the verb's help
			return runPlants(ctx, []string{args[0], "--help"}, stdio)
		}
		fmt.Fprint(stdio.Stdout, plantsHelp())
		return exitOK
	}
	fs, f := newPlantsFlags(verb, stdio.Getenv)
	if fs == nil {
		return usageError(stdio.Stderr, "plants", fmt.Errorf("unknown verb %q; %s", verb, plantsUsage))
	}
	cmd := "plants " + verb
	positional, code, ok := parseInterleaved(fs, args, stdio, plantsSynopses[verb])
	if !ok {
		return code
	}
	api, err := f.client()
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	set := setFlags(fs)
	var tagPtr *string
	if slices.Contains(set, "tag") {
		tagPtr = &f.tag
	}
	if verb == "watch" {
		if len(positional) != 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		types, err := checkWatchFlags(f, tagPtr)
		if err != nil {
			return usageError(stdio.Stderr, cmd, err)
		}
		opts := client.ChangesOptions{Wait: f.wait, Tag: tagPtr, Types: types, Snapshot: f.snapshot}
		return done(stdio, cmd, watch(ctx, api, f.after, opts, stdio.Stdout))
	}
	if verb == "list" {
		if len(positional) != 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		if slices.Contains(set, "limit") && (f.limit < 1 || f.limit > 1000) {
			return usageError(stdio.Stderr, cmd, fmt.Errorf("--limit %d: want 1 to 1000", f.limit))
		}
		opts := client.ListOptions{Limit: f.limit, Tag: tagPtr}
		if slices.Contains(set, "after") {
			opts.After = &f.afterID
		}
		if opts.Limit != 0 || opts.After != nil {
			return listPage(ctx, api, opts, f.output, stdio)
		}
		plants := []client.Plant{}
		for p, err := range api.All(ctx, client.ListOptions{Limit: 1000, Tag: tagPtr}) {
			if err != nil {
				return failed(stdio.Stderr, cmd, err)
			}
			plants = append(plants, p)
		}
		return done(stdio, cmd, printPlants(stdio.Stdout, f.output, false, plants))
	}
	if len(positional) != 1 {
		return usageError(stdio.Stderr, cmd, errors.New("wants one plant id"))
	}
	id, err := strconv.ParseInt(positional[0], 10, 64)
	if err != nil {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("id %q is not an int64", positional[0]))
	}
	if (verb == "create" || verb == "update") && !slices.Contains(set, "name") {
		return usageError(stdio.Stderr, cmd, errors.New("--name is required"))
	}
	if f.noTag && tagPtr != nil {
		return usageError(stdio.Stderr, cmd, errors.New("--tag and --no-tag exclude each other"))
	}
	ifMatch, err := parseIfMatch(f.ifMatch)
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	var p client.Plant
	switch verb {
	case "create":
		p = client.Plant{ID: id, Name: f.name, Tag: tagPtr}
		err = api.Create(ctx, p)
	case "get":
		p, err = api.Get(ctx, id)
	case "update":
		if tagPtr == nil && !f.noTag {
			p, err = renameKeepingTag(ctx, api, id, f.name, ifMatch)
		} else {
			p, err = api.Update(ctx, client.Plant{ID: id, Name: f.name, Tag: tagPtr}, ifMatch)
		}
	case "delete":
		if err = api.Delete(ctx, id, ifMatch); err == nil {
			return exitOK
		}
	}
	if err != nil {
		return failed(stdio.Stderr, cmd, err)
	}
	return done(stdio, cmd, printPlants(stdio.Stdout, f.output, true, []client.Plant{p}))
}

// renameKeepingTag is `plants update` without --tag or --no-tag: the API's
// PUT replaces the whole plant, so the stored tag is read and sent back,
// and the PUT is conditional on the version read (If-Match its ETag):
// a tag changed meanwhile is not silently overwritten (412). The user's
// --if-match (as parseIfMatch gave it), when given, must name the version
// read, compared as the server compares it.
func renameKeepingTag(ctx context.Context, api *client.Client, id int64, name, ifMatch string) (client.Plant, error) {
	stored, err := api.Get(ctx, id)
	if err != nil {
		return client.Plant{}, err
	}
	if list, _ := entitytag.Parse(ifMatch); ifMatch != "" && !list.MatchStrong(stored.ETag) {
		// The server's own answer to this precondition.
		return client.Plant{}, &client.Error{Status: http.StatusPreconditionFailed,
			Message: "plant " + strconv.FormatInt(id, 10) + " has changed: If-Match does not match its current ETag"}
	}
	return api.Update(ctx, client.Plant{ID: id, Name: name, Tag: stored.Tag}, stored.ETag)
}

// parseIfMatch reads --if-match into the If-Match value to send, with the
// server's own parser: a value the server would refuse (400) is a usage
// error here, for update and delete alike. An ETag as the server gives it
// but without its quotes (a shell ate them, or they were left out) is
// quoted: 22 base64url characters are never anything else.
func parseIfMatch(value string) (string, error) {
	if value == "" {
		return "", nil
	}
	if !strings.Contains(value, `"`) {
		parts := strings.Split(value, ",")
		for i, part := range parts {
			if part = strings.TrimSpace(part); isBareETag(part) {
				parts[i] = `"` + part + `"`
			}
		}
		value = strings.Join(parts, ",")
	}
	if _, ok := entitytag.Parse(value); !ok {
		return "", fmt.Errorf("--if-match %q: not an ETag; want the etag that plants get prints (quotes optional), a list of them, or \"*\"", value)
	}
	return value, nil
}

// isBareETag reports whether s is a plant's ETag without its quotes: the
// server's ETags are 22 characters of base64url in quotes.
func isBareETag(s string) bool {
	return len(s) == 22 && !strings.ContainsFunc(s, func(r rune) bool {
		return !strings.ContainsRune(base64URLAlphabet, r)
	})
}

// listPage is `plants list --limit N [--after ID]`: one page, and on
// stderr, while more remain, the command that prints the next one (from
// the answer's Link rel="next"), so that stdout stays one JSON array.
func listPage(ctx context.Context, api *client.Client, opts client.ListOptions, output string, stdio IO) int {
	page, err := api.List(ctx, opts)
	if err != nil {
		return failed(stdio.Stderr, "plants list", err)
	}
	if err := printPlants(stdio.Stdout, output, false, page.Plants); err != nil {
		return failed(stdio.Stderr, "plants list", err)
	}
	if next := page.Next; next != nil && next.After != nil {
		line := "plantstore plants list"
		if next.Limit != 0 {
			line += " --limit " + strconv.Itoa(next.Limit)
		}
		line += " --after " + strconv.FormatInt(*next.After, 10)
		if next.Tag != nil {
			line += " --tag " + shellQuote(*next.Tag)
		}
		fmt.Fprintf(stdio.Stderr, "next page: %s\n", line)
	}
	return exitOK
}

// done maps a write to stdout's error to the exit code.
func done(stdio IO, cmd string, err error) int {
	if err != nil {
		return failed(stdio.Stderr, cmd, err)
	}
	return exitOK
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) []string {
	var names []string
	fs.Visit(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// parseInterleaved parses flags before and after positional arguments
// (`get 5 -o table` as well as `get -o table 5`), which package flag alone
// stops at.
func parseInterleaved(fs *flag.FlagSet, args []string, stdio IO, synopsis string) (positional []string, code int, ok bool) {
	for {
		if code, ok := parse(fs, args, stdio, synopsis); !ok {
			return nil, code, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, 0, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
