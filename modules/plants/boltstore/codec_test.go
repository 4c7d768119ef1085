package boltstore

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestPlantKeyOrderIsNumericOrder(t *testing.T) {
	ids := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -256, -255, -1, 0, 1, 255, 256, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		ids = append(ids, int64(r.Uint64()))
	}
	slices.Sort(ids)
	for i, id := range ids {
		k := plantKey(id)
		back, err := plantID(k[:])
		if err != nil || back != id {
			t.Fatalf("plantID(plantKey(%d)) = %d, %v", id, back, err)
		}
		if i > 0 {
			prev := plantKey(ids[i-1])
			if c := bytes.Compare(prev[:], k[:]); c != -1 && ids[i-1] != id {
				t.Fatalf("key(%d) %x does not sort before key(%d) %x", ids[i-1], prev, id, k)
			}
		}
	}
}

func TestValueRoundTrip(t *testing.T) {
	for _, p := range []plant.Plant{
		{ID: 1, Name: ""},
		{ID: 2, Name: "", Tag: plant.StringPtr("")},
		{ID: 3, Name: "fern", Tag: plant.StringPtr("green")},
		{ID: 4, Name: string(make([]byte, 300)), Tag: plant.StringPtr("\x00\x01")},
		{ID: -5, Name: "名前 🌱"},
	} {
		assertRoundTrip(t, p)
	}
	// The layout is part of the file format: pin it.
	k := plantKey(3)
	if got := appendValue(nil, plant.Plant{ID: 3, Name: "fern", Tag: plant.StringPtr("")}); string(got) != "\x01\x04fern" {
		t.Errorf("value of fern with empty tag = %q", got)
	}
	if got := appendValue(nil, plant.Plant{ID: 3, Name: "fern"}); string(got) != "\x00\x04fern" {
		t.Errorf("value of fern without tag = %q", got)
	}
	if string(k[:]) != "\x80\x00\x00\x00\x00\x00\x00\x03" {
		t.Errorf("key of 3 = %x", k)
	}
}

func assertRoundTrip(t *testing.T, p plant.Plant) {
	t.Helper()
	v := appendValue(nil, p)
	if len(v) != valueLen(p) {
		t.Fatalf("valueLen = %d, encoded %d bytes", valueLen(p), len(v))
	}
	k := plantKey(p.ID)
	got, err := decodePlant(k[:], v)
	if err != nil || !got.Equal(p) {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", p, got, err)
	}
}

func TestDecodeRejectsCorruptValues(t *testing.T) {
	k := plantKey(9)
	for _, v := range []string{"", "\x00", "\x02\x00", "\x00\x05abc", "\x00\x01ab", "\x01\xff", "\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80x"} {
		if p, err := decodePlant(k[:], []byte(v)); !errors.Is(err, errCorruptValue) {
			t.Errorf("decode(%q) = %+v, %v; want errCorruptValue", v, p, err)
		}
	}
	if _, err := decodePlant([]byte("short"), []byte("\x00\x00")); err == nil {
		t.Error("decode with a 5-byte key succeeded")
	}
}

func FuzzValueRoundTrip(f *testing.F) {
	f.Add(int64(0), "", false, "")
	f.Add(int64(-1), "fern", true, "")
	f.Add(int64(math.MaxInt64), "a\x00b", true, "\xff")
	f.Fuzz(func(t *testing.T, id int64, name string, hasTag bool, tag string) {
		p := plant.Plant{ID: id, Name: name}
		if hasTag {
			p.Tag = &tag
		}
		assertRoundTrip(t, p)
	})
}

func FuzzDecodeNeverPanics(f *testing.F) {
	f.Add([]byte("\x01\x04fern"))
	f.Fuzz(func(t *testing.T, v []byte) {
		k := plantKey(1)
		p, err := decodePlant(k[:], v)
		if err == nil && !bytes.Equal(appendValue(nil, p), v) {
			t.Fatalf("decode(%q) = %+v, which encodes differently: the encoding must be canonical", v, p)
		}
	})
}
