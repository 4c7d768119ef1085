package changes

import (
	"context"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// SnapshotQuery selects a page of a snapshot: the plants in id order after
// After (nil: from the smallest id), only those tagged Tag when it is set,
// at most Limit (positive).
type SnapshotQuery struct {
	After *int64
	Tag   *string
	Limit int
}

// Snapshot is a page of the plants as one position of the log left them:
// Plants shows every change up to Head and none after it, so that a
// follower who takes the page and then the changes after Head (of these
// plants) misses none and is given none twice.
//
// Version is a version for every plant of the page, as a synthetic change
// that made it what it is: at least the version of every change Plants
// shows, and below the version of every change of these plants after
// Head. A later change of one of them therefore always carries a greater
// version, as every change of a plant does over the ones before it. The
// log does not keep each plant's own latest version (it prunes), so the
// snapshot gives the page's: the same for every plant of the page, and
// possibly greater than the one the plant's last change had.
type Snapshot struct {
	Plants  []plant.Plant
	Head    Cursor
	Version int64
}

// Snapshotter reads snapshots of a store's plants aligned with its change
// log. Each store implements it with the reads its isolation allows (see
// each store's snapshot.go); the suite in changestest holds them to the
// contract above, with writers running.
type Snapshotter interface {
	Snapshot(ctx context.Context, q SnapshotQuery) (Snapshot, error)
}
