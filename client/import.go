package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"
	"time"
)

// ImportResult is the server's answer to one plant of Import.
type ImportResult struct {
	Line   int    // the plant's line in the stream, from 1
	ID     int64  // the plant's id; 0 for a refused line
	Result string // one of the Import* results
	// Stored is the plant stored under the id, with its ETag, when the
	// result is ImportConflict: a caller may replace it with Update and
	// that ETag.
	Stored *Plant
	// Err is the Error a single create would have answered, for
	// ImportRefused (400, its message naming the line) and ImportFailed.
	Err *Error
}

// The results of an imported line.
const (
	ImportCreated   = "created"   // stored by this import
	ImportUnchanged = "unchanged" // an identical plant was stored already
	ImportConflict  = "conflict"  // the id holds a different plant (Stored)
	ImportRefused   = "refused"   // the line is not a NewPlant (Err, 400)
	ImportFailed    = "failed"    // the store could not create it (Err); send it again
)

// ErrImportUnsupported is Import's error from a server without the bulk
// create (it answers 404 to it): create the plants one by one instead.
var ErrImportUnsupported = errors.New("plantstore: the server has no bulk import (POST /plants:import)")

// Import creates plants in one streamed request and yields one result per
// plant, in plants' order, each once the server has committed it. Results
// flow while plants are still being sent; the server commits many at once.
//
// The iteration yields a non-nil error and stops when the stream cannot
// go on: ErrImportUnsupported; an *Error when the server refused the
// request, or ended the stream early (a line or the stream over the
// server's caps); a connection error. Plants whose results were not
// yielded may or may not be stored: sending them again is safe (an
// identical plant is ImportUnchanged). Stopping the iteration early ends
// the request.
//
// A request refused before its stream starts (503, 429) is retried as
// other calls are, ranging over plants again. The client's timeout (see
// WithHTTPClient) does not apply: a stream of millions of plants takes
// longer than any timeout fit for one call; ctx bounds it, and the server
// its every line.
func (c *Client) Import(ctx context.Context, plants iter.Seq[Plant]) iter.Seq2[ImportResult, error] {
	return func(yield func(ImportResult, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var resp *http.Response
		var sending chan struct{}
		err := c.retries.do(ctx, false, func() (int, string, error) {
			pr, pw := io.Pipe()
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				_ = pw.CloseWithError(writePlants(pw, plants))
			}()
			r, err := c.stream.ImportPlantsWithBody(ctx, "application/x-ndjson", pr)
			if err != nil {
				_ = pr.CloseWithError(err)
				<-sent
				return 0, "", err
			}
			if r.StatusCode == http.StatusOK {
				resp, sending = r, sent
				return r.StatusCode, "", nil
			}
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			_ = r.Body.Close()
			_ = pr.CloseWithError(errors.New("refused"))
			<-sent
			if r.StatusCode == http.StatusNotFound {
				return r.StatusCode, "", ErrImportUnsupported
			}
			return r.StatusCode, r.Header.Get("Retry-After"), apiError(r.StatusCode, body)
		})
		if err != nil {
			yield(ImportResult{}, err)
			return
		}
		defer func() {
			cancel() // ends the request, and so the sending, when the caller stops early
			_ = resp.Body.Close()
			<-sending
		}()
		for res, err := range readResults(resp.Body) {
			if !yield(res, err) || err != nil {
				return
			}
		}
	}
}

// writePlants writes plants to w as NDJSON, in large writes while plants
// come fast, and at most flushEvery after a plant while they come slowly:
// a caller that waits for a result before sending more is not stalled by
// a buffer.
func writePlants(w io.Writer, plants iter.Seq[Plant]) error {
	var mu sync.Mutex // bw, shared with the flusher
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(flushEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				mu.Lock()
				if bw.Buffered() > 0 {
					_ = bw.Flush() // a failed write fails the next Encode too
				}
				mu.Unlock()
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	for p := range plants {
		mu.Lock()
		err := enc.Encode(p)
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return bw.Flush()
}

// flushEvery bounds how long a plant waits in the send buffer.
const flushEvery = 5 * time.Millisecond

// resultLine is a line of the answer: a result, or the Error that ends a
// stream cut short (no "result").
type resultLine struct {
	Line    int             `json:"line"`
	ID      int64           `json:"id"`
	Result  string          `json:"result"`
	Stored  *Plant          `json:"stored"`
	ETag    string          `json:"etag"`
	Err     json.RawMessage `json:"error"`
	Message string          `json:"message"`
}

// readResults yields the results of an answer, then an error if the
// stream ended with one (or was cut).
func readResults(body io.Reader) iter.Seq2[ImportResult, error] {
	return func(yield func(ImportResult, error) bool) {
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var l resultLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				yield(ImportResult{}, fmt.Errorf("plantstore: import: a result is not JSON: %w", err))
				return
			}
			if l.Result == "" { // the Error that ends a stream cut short
				var status int
				_ = json.Unmarshal(l.Err, &status)
				yield(ImportResult{}, &Error{Status: status, Message: l.Message})
				return
			}
			res := ImportResult{Line: l.Line, ID: l.ID, Result: l.Result}
			if l.Stored != nil {
				res.Stored = l.Stored
				res.Stored.ETag = l.ETag
			}
			if len(l.Err) > 0 {
				var e struct {
					Error   int    `json:"error"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(l.Err, &e)
				res.Err = &Error{Status: e.Error, Message: e.Message}
			}
			if !yield(res, nil) {
				return
			}
		}
		err := sc.Err()
		if err == nil {
			return // the stream's end
		}
		yield(ImportResult{}, fmt.Errorf("plantstore: import: %w", err))
	}
}
