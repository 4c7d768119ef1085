package boltstore

import (
	"errors"
	"flag"
	"time"
)

// Config is the bolt store's part of the program's configuration.
type Config struct {
	DataDir string // the directory of plants.db (see Open)
	// ChangesRetention is how long the change log keeps a change, and the
	// outbox a delivered event (for a replay); zero keeps them for ever.
	// The plants module owns its flag, shared by every store.
	ChangesRetention time.Duration
}

// RegisterFlags defines the bolt store's flags on fs, each filling its
// field of c with its default.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory of the bolt store's plants.db")
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts).
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	return nil
}
