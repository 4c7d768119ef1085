package plants

import (
	"errors"
	"flag"
	"fmt"
)

// RegisterFlags defines the plants module's flags on fs, and each store's,
// each filling its field of c with its default.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Store, "store", StoreBolt, "plant store: "+storeNames())
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", DefaultMaxBodyBytes, "largest accepted request body in bytes")
	fs.Int64Var(&c.MaxImportBytes, "max-import-bytes", defaultMaxImportBytes, "largest accepted stream of POST /plants:import in bytes (each line is capped by --max-body-bytes)")
	fs.DurationVar(&c.ChangesRetention, "changes-retention", defaultChangesRetention,
		"how long every store keeps a change in its log (the change feed's window) and a delivered webhook event (for a replay); at least 1m, or 0 to keep them for ever")
	for _, k := range storeKinds {
		if k.flags != nil {
			k.flags(c, fs)
		}
	}
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts). Each
// store's kind checks its own part, told whether it is the chosen store
// (see StoreKind.validate).
func (c Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("--max-body-bytes %d: must be positive", c.MaxBodyBytes))
	}
	if c.MaxImportBytes < 0 { // zero, in a Config built in code, is the default
		errs = append(errs, fmt.Errorf("--max-import-bytes %d: must not be negative", c.MaxImportBytes))
	}
	if c.ChangesRetention != 0 && c.ChangesRetention < minChangesRetention {
		errs = append(errs, fmt.Errorf("--changes-retention %v: must be at least %v, or 0 to keep every change", c.ChangesRetention, minChangesRetention))
	}
	if _, ok := LookupStore(c.Store); !ok {
		errs = append(errs, fmt.Errorf("--store %q: want %s", c.Store, storeNames()))
	}
	for _, k := range storeKinds {
		if k.validate != nil {
			errs = append(errs, k.validate(c, k.Name == c.Store))
		}
	}
	return errors.Join(errs...)
}
