package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/plantstore/plantstore/modules/plants"
)

// migrate is the "migrate" subcommand: it brings the store's schema up to
// date and exits, for operators who migrate in a Kubernetes Job before a
// rollout rather than in the replicas' start (docs/kubernetes.md). It reads
// the same store flags and PLANTSTORE_* variables as the server, so the Job
// can share the Deployment's ConfigMap; the server still migrates at start,
// which then finds nothing to do.
//
// Each store migrates as its kind says (plants.Migrate): postgres applies
// the embedded migrations under the advisory lock, as a starting replica
// does; bolt opens plants.db, which applies the file's own upgrades under
// its file lock, so it fails while a server holds the file; memory has no
// schema and is refused. Exit codes as for a start: 0 done, 2 for a bad
// flag or a failed migration, with one line on stderr.
func migrate(args []string, stdout, stderr io.Writer) int {
	var cfg migrateConfig
	fs := migrateFlags(&cfg)
	settings, err := parseFlags(fs, args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = settings.rename(oneLine(errors.Join(cfg.Plants.Validate(), validateStartTimeout(cfg.StartTimeout))))
	}
	if err != nil {
		fmt.Fprintf(stderr, "plantstore migrate: %v (see plantstore migrate --help)\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	if err := plants.Migrate(ctx, cfg.Plants); err != nil {
		if e := noPostgresNamed(err, cfg.Plants); e != nil {
			err = e
		}
		fmt.Fprintf(stderr, "plantstore migrate: %v\n", settings.rename(err))
		return 2
	}
	fmt.Fprintf(stdout, "plantstore migrate: the %s store's schema is up to date\n", cfg.Plants.Store)
	return 0
}

// migrateConfig is what the migrate command reads from its flags.
type migrateConfig struct {
	Plants       plants.Config
	StartTimeout time.Duration
}

// migrateFlags is the migrate command's flag set, filling cfg: the command
// and its shell completion both use it.
func migrateFlags(cfg *migrateConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfg.Plants.RegisterFlags(fs)
	registerStartTimeout(fs, &cfg.StartTimeout)
	return fs
}
