package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"

	"github.com/plantstore/plantstore/client"
)

const plantsUsage = "usage: plantstore plants create|get|list|update|delete [flags]"

// runPlants is `plantstore plants <verb>`.
func runPlants(ctx context.Context, args []string, stdio IO) int {
	if len(args) == 0 {
		return usageError(stdio.Stderr, "plants", errors.New(plantsUsage))
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("plants "+verb, flag.ContinueOnError)
	var c common
	c.register(fs, stdio.Getenv)
	var name, tag, ifMatch string
	var limit int
	switch verb {
	case "create", "update":
		fs.StringVar(&name, "name", "", "the plant's name (required)")
		fs.StringVar(&tag, "tag", "", "the plant's tag (none when not given)")
		if verb == "update" {
			fs.StringVar(&ifMatch, "if-match", "", "update only while the plant has this ETag (from get), or \"*\"")
		}
	case "delete":
		fs.StringVar(&ifMatch, "if-match", "", "delete only while the plant has this ETag (from get), or \"*\"")
	case "list":
		fs.IntVar(&limit, "limit", 1000, "page size while walking the pages (1 to 1000)")
		fs.StringVar(&tag, "tag", "", "only plants with exactly this tag")
	case "get":
	default:
		return usageError(stdio.Stderr, "plants", fmt.Errorf("unknown verb %q; %s", verb, plantsUsage))
	}
	positional, code, ok := parseInterleaved(fs, args, stdio)
	if !ok {
		return code
	}
	cmd := "plants " + verb
	api, err := c.client()
	if err != nil {
		return usageError(stdio.Stderr, cmd, err)
	}
	var tagPtr *string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "tag" {
			tagPtr = &tag
		}
	})
	if verb == "list" {
		if len(positional) != 0 {
			return usageError(stdio.Stderr, cmd, errors.New("takes no arguments"))
		}
		if limit < 1 || limit > 1000 {
			return usageError(stdio.Stderr, cmd, fmt.Errorf("--limit %d: want 1 to 1000", limit))
		}
		plants := []client.Plant{}
		for p, err := range api.All(ctx, client.ListOptions{Limit: limit, Tag: tagPtr}) {
			if err != nil {
				return failed(stdio.Stderr, cmd, err)
			}
			plants = append(plants, p)
		}
		return done(stdio, cmd, printPlants(stdio.Stdout, c.output, false, plants))
	}
	if len(positional) != 1 {
		return usageError(stdio.Stderr, cmd, errors.New("wants one plant id"))
	}
	id, err := strconv.ParseInt(positional[0], 10, 64)
	if err != nil {
		return usageError(stdio.Stderr, cmd, fmt.Errorf("id %q is not an int64", positional[0]))
	}
	if (verb == "create" || verb == "update") && !slices.ContainsFunc(setFlags(fs), func(n string) bool { return n == "name" }) {
		return usageError(stdio.Stderr, cmd, errors.New("--name is required"))
	}
	var p client.Plant
	switch verb {
	case "create":
		p = client.Plant{ID: id, Name: name, Tag: tagPtr}
		err = api.Create(ctx, p)
	case "get":
		p, err = api.Get(ctx, id)
	case "update":
		p, err = api.Update(ctx, client.Plant{ID: id, Name: name, Tag: tagPtr}, ifMatch)
	case "delete":
		if err = api.Delete(ctx, id, ifMatch); err == nil {
			return exitOK
		}
	}
	if err != nil {
		return failed(stdio.Stderr, cmd, err)
	}
	return done(stdio, cmd, printPlants(stdio.Stdout, c.output, true, []client.Plant{p}))
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
func parseInterleaved(fs *flag.FlagSet, args []string, stdio IO) (positional []string, code int, ok bool) {
	for {
		if code, ok := parse(fs, args, stdio.Stderr); !ok {
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
