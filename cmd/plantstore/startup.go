package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/dig"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/internal/buildinfo"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/telemetry"
)

// logServing writes the start's one summary line, once every start hook
// has succeeded: what runs, where, on which store, and what is on. It holds
// no secret: token counts and file paths, never tokens; the database's
// user, host and name, never its password.
func logServing(log *zap.Logger, cfg config, servers *httpserver.Servers, tracing *telemetry.Tracing) {
	info := buildinfo.Get()
	fields := []zap.Field{
		zap.String("version", info.Version),
		zap.String("api", servers.APIAddr().String()),
		zap.String("admin", servers.AdminAddr().String()),
	}
	fields = append(fields, cfg.Plants.ServingFields()...)
	if cfg.Auth.TokensFile != "" {
		fields = append(fields, zap.String("tokens_file", cfg.Auth.TokensFile))
	}
	if n := len(cfg.Auth.Tokens); n > 0 {
		fields = append(fields, zap.Int("tokens", n))
	}
	fields = append(fields,
		zap.String("jwt", onOff(cfg.Auth.JWT.Issuer != "" || cfg.Auth.JWT.JWKSURL != "")),
		zap.String("webhooks", onOff(cfg.Webhooks.On())),
		zap.String("tracing", onOff(tracing.Enabled())),
		zap.String("pprof", onOff(cfg.HTTP.Pprof)),
	)
	log.Info("serving", fields...)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// startError is the one line a failed start prints: the root cause, and for
// a listener, its name and flag (admin listener --admin-addr :9090:
// address already in use). Two causes a first start often meets get what
// to do: a file the process may not read, and postgres with nothing saying
// where the database is.
func startError(err error, cfg config) error {
	if le, ok := errors.AsType[*httpserver.ListenError](err); ok {
		return fmt.Errorf("%s listener --%s %s: %w", le.Listener, listenerFlags[le.Listener], le.Addr, le.Err)
	}
	if e := unreadableFile(err, cfg); e != nil {
		return e
	}
	if e := noPostgresNamed(err, cfg.Plants); e != nil {
		return e
	}
	return dig.RootCause(err)
}

// unreadableFile explains a permission error on a file the flags name. The
// image runs as uid 65532, so a file made 0600 by its owner on the host (as
// a careful umask makes it) cannot be read in the container.
func unreadableFile(err error, cfg config) error {
	pe, ok := errors.AsType[*fs.PathError](err)
	if !ok || !errors.Is(pe.Err, fs.ErrPermission) {
		return nil
	}
	files := []struct{ flag, path string }{
		{"tokens-file", cfg.Auth.TokensFile},
		{"webhooks-file", cfg.Webhooks.File},
		{"jwt-ca-file", cfg.Auth.JWT.CAFile},
		{"jwt-fetch-token-file", cfg.Auth.JWT.FetchToken},
	}
	who := fmt.Sprintf("plantstore runs as uid %d, gid %d", os.Geteuid(), os.Getegid())
	for _, f := range files {
		if f.path != "" && filepath.Clean(f.path) == filepath.Clean(pe.Path) {
			return fmt.Errorf("--%s %s: cannot read the file: %v (%s: make the file readable by that user or group, e.g. chown %d or chgrp %d and chmod g+r)",
				f.flag, f.path, pe.Err, who, os.Geteuid(), os.Getegid())
		}
	}
	return fmt.Errorf("%v (%s)", dig.RootCause(err), who)
}

// libpqTargetVars are the PG* variables that tell libpq where to connect.
var libpqTargetVars = []string{"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE"}

// noPostgresNamed explains a failed connection when neither --postgres-url
// nor a PG* variable said where the database is: libpq then tries the local
// socket as the current user, and its message names neither.
func noPostgresNamed(err error, cfg plants.Config) error {
	if cfg.Store != plants.StorePostgres || cfg.Postgres.URL != "" {
		return nil
	}
	for _, v := range libpqTargetVars {
		if os.Getenv(v) != "" {
			return nil
		}
	}
	ce, ok := errors.AsType[*pgconn.ConnectError](err)
	if !ok {
		return nil
	}
	return fmt.Errorf("--store postgres: no database given: set --postgres-url (%s) or libpq's PG* variables (PGHOST, PGDATABASE, PGUSER, PGPASSWORD, ...); the default, the local socket, failed: %s",
		envVar("postgres-url"), strings.NewReplacer("\n\t", " ", "\n", " ").Replace(ce.Error()))
}
