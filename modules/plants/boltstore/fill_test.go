package boltstore

import (
	"testing"
	"testing/synctest"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The committer's one wait (waitForWriters) under testing/synctest: the
// clock is the bubble's, so a wait is measured exactly, with the
// production values. The disk is real; its commits take no time on the
// bubble's clock, so a slow commit is a write that sleeps in its
// transaction (the stall below) for as long as the test says.

// openInBubble opens a store whose committer runs in the test's bubble.
func openInBubble(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	MustStart(t, s)
	return s
}

// slowCommitWith runs a commit that lasts d on the bubble's clock and
// queues creates of ids behind it, which the next batch holds; it returns
// when the slow commit is done, with the creates' outcomes to come.
func slowCommitWith(t *testing.T, s *Store, d time.Duration, ids ...int64) []<-chan error {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	slow := async(func() error {
		return errOf(s.writes.do(ctx, func(*bolt.Tx) (plant.CreateResult, error) {
			close(entered)
			<-gate
			return 0, nil
		}))
	})
	<-entered
	var creates []<-chan error
	for _, id := range ids {
		creates = append(creates, async(func() error { return errOf(s.Create(ctx, plant.Plant{ID: id, Name: "p"})) }))
		synctest.Wait() // queued, in this order
	}
	time.Sleep(d)
	close(gate)
	if err := <-slow; err != nil {
		t.Fatalf("slow commit = %v", err)
	}
	return creates
}

func wait(t *testing.T, chans []<-chan error) {
	t.Helper()
	for i, ch := range chans {
		if err := <-ch; err != nil {
			t.Fatalf("create %d = %v", i, err)
		}
	}
}

// TestFillWaitIsTheLastCommitsTimeCapped: two writes queued behind a commit
// make the committer expect three writers in the next batch (the one just
// answered and the two queued); with two only, it waits for the third as
// long as the last commit took, at most maxFillWait, then commits the two.
func TestFillWaitIsTheLastCommitsTimeCapped(t *testing.T) {
	for _, c := range []struct{ lastCommit, wait time.Duration }{
		{2 * time.Millisecond, 2 * time.Millisecond},
		{maxFillWait, maxFillWait},
		{20 * time.Millisecond, maxFillWait},
	} {
		t.Run(c.lastCommit.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := openInBubble(t)
				defer s.Close()
				creates := slowCommitWith(t, s, c.lastCommit, 1, 2)
				start := time.Now()
				wait(t, creates)
				if got := time.Since(start); got != c.wait {
					t.Errorf("after a commit of %v, the next batch waited %v, want %v", c.lastCommit, got, c.wait)
				}
				if st := s.Stats(); st.Commits != 2 || st.WritesCommitted != 3 {
					t.Errorf("%d writes in %d commits, want 3 in 2 (the slow one, then the two)", st.WritesCommitted, st.Commits)
				}
			})
		})
	}
}

// TestReturningWriterEndsTheWait: the writer expected back that arrives
// within the wait joins the batch, which commits at once: one commit for
// the three.
func TestReturningWriterEndsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openInBubble(t)
		defer s.Close()
		creates := slowCommitWith(t, s, 20*time.Millisecond, 1, 2)
		start := time.Now()
		time.Sleep(time.Millisecond)
		third := async(func() error { return errOf(s.Create(ctx, plant.Plant{ID: 3, Name: "p"})) })
		wait(t, append(creates, third))
		if got := time.Since(start); got != time.Millisecond {
			t.Errorf("the batch committed %v after the slow commit, want 1ms, when the third writer came", got)
		}
		if st := s.Stats(); st.Commits != 2 || st.WritesCommitted != 4 {
			t.Errorf("%d writes in %d commits, want 4 in 2 (the slow one, then the three)", st.WritesCommitted, st.Commits)
		}
	})
}

// TestLoneWriterNeverWaits: a writer alone expects no one else, so its
// writes commit at once even after a slow commit.
func TestLoneWriterNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := openInBubble(t)
		defer s.Close()
		slowCommitWith(t, s, 20*time.Millisecond)
		// The committer counts the writers expected back once it has
		// answered the slow write; a create sent before that would count
		// twice (the writer answered, and a write queued).
		synctest.Wait()
		start := time.Now()
		for id := range int64(3) {
			if _, err := s.Create(ctx, plant.Plant{ID: id, Name: "p"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := time.Since(start); got != 0 {
			t.Errorf("three creates of a lone writer took %v, want no wait at all", got)
		}
		if commits := s.Stats().Commits; commits != 4 {
			t.Errorf("%d commits, want 4 (the slow one, then one per create)", commits)
		}
	})
}
