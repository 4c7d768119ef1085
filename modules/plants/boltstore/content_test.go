package boltstore

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestSamePlantComparesContent(t *testing.T) {
	value := func(p plant.Plant) []byte { return appendValue(nil, p) }
	fern := plant.Plant{ID: 1, Name: "a", Tag: plant.StringPtr("fern")}
	// The name's length as a two-byte uvarint: the same plant in other bytes,
	// as a later encoder might write it.
	longForm := []byte{valueTag, 0x81, 0x00, 'a', 'f', 'e', 'r', 'n'}
	for name, tc := range map[string]struct {
		stored, value []byte
		want          bool
	}{
		"equal bytes":           {value(fern), value(fern), true},
		"other bytes, same":     {longForm, value(fern), true},
		"other name":            {value(fern), value(plant.Plant{Name: "b", Tag: fern.Tag}), false},
		"other tag":             {value(fern), value(plant.Plant{Name: "a", Tag: plant.StringPtr("moss")}), false},
		"no tag":                {value(fern), value(plant.Plant{Name: "a"}), false},
		"empty tag, no tag":     {value(plant.Plant{Name: "a", Tag: plant.StringPtr("")}), value(plant.Plant{Name: "a"}), false},
		"stored value corrupt":  {[]byte{9, 1, 'a'}, value(plant.Plant{Name: "a"}), false},
		"stored value too long": {[]byte{valueNoTag, 1, 'a', 'x'}, value(plant.Plant{Name: "a"}), false},
	} {
		if got := samePlant(tc.stored, tc.value); got != tc.want {
			t.Errorf("%s: samePlant = %v, want %v", name, got, tc.want)
		}
	}
}

// TestCreateRetryComparesContent: a create of a plant stored in other bytes
// (a later format's, or another encoder's) is a retry when the name and
// tag are the same, and a conflict when not, whether the stored plant was
// on disk before Open (answered from a read) or committed since (answered
// in the committer).
func TestCreateRetryComparesContent(t *testing.T) {
	ctx := context.Background()
	p := plant.Plant{ID: 7, Name: "a", Tag: plant.StringPtr("fern")}
	other := plant.Plant{ID: 7, Name: "b", Tag: plant.StringPtr("fern")}
	putLongForm := func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			key, _, index := encode(p)
			_, err := create(tx, key[:], []byte{valueTag, 0x81, 0x00, 'a', 'f', 'e', 'r', 'n'}, index)
			return err
		})
	}
	for _, beforeOpen := range []bool{true, false} {
		dir := t.TempDir()
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		MustStart(t, s)
		if beforeOpen {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(dir+"/"+FileName, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(putLongForm(db), db.Close()); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir); err != nil {
				t.Fatal(err)
			}
			MustStart(t, s)
		} else if err := putLongForm(s.db); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, p); err != nil {
			t.Errorf("stored before Open %v: identical create = %v, want nil", beforeOpen, err)
		}
		if _, err := s.Create(ctx, other); !errors.Is(err, plant.ErrConflict) {
			t.Errorf("stored before Open %v: different create = %v, want a conflict", beforeOpen, err)
		}
		if err := errors.Join(s.Check(), s.Close()); err != nil {
			t.Fatal(err)
		}
	}
}
