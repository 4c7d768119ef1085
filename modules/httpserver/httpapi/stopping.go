package httpapi

// Stopping is closed when the API server begins its shutdown, once the
// drain delay has passed (the http module provides it). The shutdown waits
// for every request in flight, so an answer that lasts as long as its
// client wants (a stream, a long poll) ends when it closes, cleanly, rather
// than hold the shutdown until its timeout and be cut off.
type Stopping <-chan struct{}
