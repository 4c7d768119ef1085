package plants

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/plants/plantjson"
)

// importPath is the bulk create: an NDJSON stream of NewPlants in, an NDJSON
// stream of one result per plant out, in the input's order. It is a route
// of its own rather than a second content type of POST /plants so that the
// chain does not read its body ahead (a stream has no end to wait for), and
// so that a server without it answers 404 whatever the content type.
const importPath = "/plants:import"

// ndjsonContentType is the media type of both streams.
const ndjsonContentType = "application/x-ndjson"

// defaultMaxImportBytes is the default cap on one import stream, 1 GiB:
// about fifteen million plants of a typical size.
const defaultMaxImportBytes = 1 << 30

// importWindow is how many creates of one stream are in flight at once:
// enough that bolt's group commit and postgres's batches fill up from one
// client, and the default --max-concurrent-requests, so one stream asks
// the store for no more than a full server of single creates would.
const importWindow = 256

// A store that creates in batches (plant.BatchCreator) gets the lines in
// batches rather than one create each: one goroutine takes every line
// queued for it, up to batchLines, whenever a batch may start, so a batch
// is one line for a client sending slowly (its result comes at once) and
// batchLines for a fast one, whose next batch is read while the last ones
// commit. A batch costs its store a transaction, a commit and a few
// statements whatever it holds; past some thousands of lines it saves
// nothing more, and a bound keeps a stream's memory and a commit's size
// small.
const batchLines = 8192

// batchesInFlight is how many batches of a stream run at once: two, so
// that postgres works on one while the other's rows travel, and its two
// backends use two processors. A batch sharing an id with one in flight
// waits for it, so that the first of two lines with one id is the one
// created.
const batchesInFlight = 2

// deadlineStep: the connection's deadlines are moved at most this often,
// not once per line.
const deadlineStep = time.Second

// Importer serves the bulk create over the create's store, decoder and
// metric, with the single create's limits applied per line.
type Importer struct {
	h            *Handlers
	maxStream    int64
	readTimeout  time.Duration
	writeTimeout time.Duration
}

// importerParams are what NewImporter takes from the app; the listeners'
// config is optional so that a test app without the http module builds.
type importerParams struct {
	fx.In

	Handlers *Handlers
	Config   Config
	Limits   httpapi.Limits `optional:"true"`
}

// NewImporter returns the bulk create of h: one stream may carry at most
// maxStream bytes; a line must arrive within readTimeout of the one before
// it, and a result be written within writeTimeout (the server's
// --read-timeout and --write-timeout, which bound a single create as a
// whole; zero means their defaults).
func NewImporter(h *Handlers, maxStream int64, readTimeout, writeTimeout time.Duration) *Importer {
	if readTimeout <= 0 {
		readTimeout = httpapi.DefaultLimits.ReadTimeout
	}
	if writeTimeout <= 0 {
		writeTimeout = httpapi.DefaultLimits.WriteTimeout
	}
	if maxStream <= 0 {
		maxStream = defaultMaxImportBytes
	}
	return &Importer{h: h, maxStream: maxStream, readTimeout: readTimeout, writeTimeout: writeTimeout}
}

func newImporterFromApp(p importerParams) *Importer {
	return NewImporter(p.Handlers, p.Config.MaxImportBytes, p.Limits.ReadTimeout, p.Limits.WriteTimeout)
}

// Routes is the import route; it needs the create's scope.
func (im *Importer) Routes() []httpapi.Route {
	return []httpapi.Route{{Method: http.MethodPost, Path: importPath, Handler: http.HandlerFunc(im.serve), Requires: principal.ScopePlantsWrite}}
}

// pending is one line's result, ready once done is closed.
type pending struct {
	line   int
	id     int64
	result []byte // the whole result line, newline included
	done   chan struct{}
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (im *Importer) serve(w http.ResponseWriter, r *http.Request) {
	if !checkBodyHeaders(w, r, ndjsonContentType) {
		return
	}
	// A stream lasts as long as its client sends: it leaves the shared
	// request slots for the imports' own, capped per token.
	end, ok := httpapi.Last(w, r, httpapi.Import, callerID(r))
	if !ok {
		return
	}
	defer end()
	rc := http.NewResponseController(w)
	// HTTP/1.1 answers before the body is read to its end only when asked:
	// results flow while lines still arrive. HTTP/2 streams do so anyway.
	_ = rc.EnableFullDuplex()
	w.Header().Set("Content-Type", ndjsonContentType)
	w.WriteHeader(http.StatusOK)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Besides the queued lines, the writer holds one (waiting for its
	// result) and the reader one (started, waiting for room in the queue).
	queue := make(chan *pending, importWindow-2)
	var creator lineCreator = im.createAlone
	batched := closedDone
	if bc, ok := im.h.store.(plant.BatchCreator); ok {
		// Room for the batch committing and the next one, read meanwhile.
		queue = make(chan *pending, (batchesInFlight+1)*batchLines)
		lines := make(chan batchLine, batchLines)
		creator = func(ctx context.Context, p *pending, np plant.Plant, _ *pending) {
			lines <- batchLine{p: p, plant: np} // the batches' goroutine never waits for the reader or the writer
		}
		done := make(chan struct{})
		batched = done
		go func() {
			defer close(done)
			im.createBatches(ctx, bc, lines)
		}()
		defer func() {
			close(lines)
			<-batched // every line's create is done when the handler returns
		}()
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		im.writeResults(ctx, cancel, w, rc, queue)
	}()
	body := r.Body // readLines caps it
	final := im.readLines(ctx, r, rc, w, queue, creator)
	close(queue)
	<-written
	if final != nil && ctx.Err() == nil {
		_ = rc.SetWriteDeadline(time.Now().Add(im.writeTimeout))
		_, _ = w.Write(append(final, '\n'))
		_ = rc.Flush()
		// A client still sending when the connection closes gets a reset,
		// which can drop the results still on their way to it: what it
		// sends is read and dropped, for a bounded while, until it has
		// seen the end and stops.
		_ = rc.SetReadDeadline(time.Now().Add(drainFor))
		_, _ = io.Copy(io.Discard, io.LimitReader(body, drainMax))
	}
}

// drainFor and drainMax bound the reading of a stream's unwanted rest.
const (
	drainFor = 5 * time.Second
	drainMax = 16 << 20
)

// readLines reads the stream line by line, starting a create for each
// good line (at most importWindow waiting for their turn to be written)
// and queueing each line's result in order. It returns the final Error
// line that ends a stream cut short (a line or the stream over its cap, a
// body that could not be read), nil at the stream's end.
func (im *Importer) readLines(ctx context.Context, r *http.Request, rc *http.ResponseController, w http.ResponseWriter, queue chan<- *pending, create lineCreator) []byte {
	br := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, im.maxStream), 64<<10)
	lineCap := im.h.maxBodyBytes
	var buf []byte
	recent := recentIDs{pending: make(map[int64]*pending)}
	extended := time.Now()
	for line := 1; ; line++ {
		b, err := readLine(br, lineCap, buf[:0])
		buf = b
		if now := time.Now(); now.Sub(extended) >= deadlineStep {
			_ = rc.SetReadDeadline(now.Add(im.readTimeout))
			extended = now
		}
		var tooLong *lineTooLongError
		var maxErr *http.MaxBytesError
		switch {
		case errors.As(err, &tooLong):
			return httperr.Body(http.StatusRequestEntityTooLarge, "line "+strconv.Itoa(line)+
				" is longer than the limit of "+strconv.FormatInt(lineCap, 10)+" bytes; the stream ends here")
		case errors.As(err, &maxErr):
			return httperr.Body(http.StatusRequestEntityTooLarge, "the stream is larger than the limit of "+
				strconv.FormatInt(im.maxStream, 10)+" bytes; it ends before line "+strconv.Itoa(line))
		case err != nil && !errors.Is(err, io.EOF):
			return httperr.Body(http.StatusBadRequest, "the stream could not be read at line "+strconv.Itoa(line)+"; it ends here")
		}
		if trimmed := bytes.Trim(b, jsonSpace); len(trimmed) > 0 {
			p := im.start(ctx, line, trimmed, &recent, create)
			select {
			case queue <- p:
			case <-ctx.Done():
				return nil
			}
		}
		if err != nil { // io.EOF after the last line
			return nil
		}
	}
}

// jsonSpace is the whitespace JSON allows around a value: a line of it
// alone is blank and skipped, with no result.
const jsonSpace = " \t\r\n"

// start decodes one line with the create's decoder and, for a plant,
// starts its create; its result is ready when the returned pending's done
// is closed.
func (im *Importer) start(ctx context.Context, line int, b []byte, recent *recentIDs, create lineCreator) *pending {
	p := &pending{line: line}
	np, err := plantjson.DecodeNewPlantIn(b, lineSubject)
	if err != nil {
		p.result = refusedLine(line, http.StatusBadRequest, "line "+strconv.Itoa(line)+": "+err.Error())
		p.done = closedDone
		return p
	}
	p.id, p.done = np.ID, make(chan struct{})
	create(ctx, p, np, recent.add(p))
	return p
}

// lineCreator starts the create of np, line p, setting p's result and
// closing its done once it is known; before is the line with the same id
// that may still be in flight, if any.
type lineCreator func(ctx context.Context, p *pending, np plant.Plant, before *pending)

// createAlone is the lineCreator of a store without batches: a create of
// its own per line, at most importWindow at once. A line whose id an
// earlier line still in flight has waits for it: of two lines with one
// id, the first is the one created.
func (im *Importer) createAlone(ctx context.Context, p *pending, np plant.Plant, before *pending) {
	go func() {
		defer close(p.done)
		if before != nil {
			<-before.done
		}
		p.result = im.create(ctx, p.line, np)
	}()
}

// batchLine is a line on its way to a batch.
type batchLine struct {
	p     *pending
	plant plant.Plant
}

// createBatches creates the lines in batches (see batchLines), at most
// batchesInFlight at once, until lines is closed and empty, and returns
// once every batch is done.
func (im *Importer) createBatches(ctx context.Context, bc plant.BatchCreator, lines <-chan batchLine) {
	var running []*runningBatch // in the order they started
	defer func() {
		for _, rb := range running {
			<-rb.done
		}
	}()
	var held []batchLine // lines held over: their id was in the batch already
	for {
		if len(held) == 0 {
			first, ok := <-lines
			if !ok {
				return
			}
			held = append(held, first)
		}
		rb := &runningBatch{batch: make([]batchLine, 0, min(batchLines, len(held)+len(lines))), done: make(chan struct{})}
		rb.batch, rb.ids, held = fillBatch(rb.batch, held, lines)
		// Room, and no id of a batch still running.
		if len(running) == batchesInFlight {
			<-running[0].done
			running = running[1:]
		}
		running = slices.DeleteFunc(running, func(r *runningBatch) bool {
			if r.shares(rb) {
				<-r.done
				return true
			}
			return false
		})
		running = append(running, rb)
		go func() {
			defer close(rb.done)
			im.createBatch(ctx, bc, rb.batch)
		}()
	}
}

// runningBatch is a batch on its way to the store.
type runningBatch struct {
	batch []batchLine
	ids   map[int64]struct{}
	done  chan struct{}
}

// shares reports whether b and o hold an id in common.
func (b *runningBatch) shares(o *runningBatch) bool {
	small, large := b.ids, o.ids
	if len(small) > len(large) {
		small, large = large, small
	}
	for id := range small {
		if _, ok := large[id]; ok {
			return true
		}
	}
	return false
}

// fillBatch makes a batch of held-over and queued lines, without waiting,
// and returns it with its ids. A batch holds an id once only: a later
// line with an id in the batch is held over for the next one, so that of
// two lines with one id the first is the one created, and the second is
// answered as a create after it.
func fillBatch(batch, held []batchLine, lines <-chan batchLine) (_ []batchLine, ids map[int64]struct{}, rest []batchLine) {
	ids = make(map[int64]struct{}, min(batchLines, len(held)+len(lines)))
	add := func(l batchLine) {
		if _, dup := ids[l.plant.ID]; dup {
			rest = append(rest, l)
			return
		}
		ids[l.plant.ID] = struct{}{}
		batch = append(batch, l)
	}
	for _, l := range held {
		add(l)
	}
	for len(batch) < batchLines {
		select {
		case l, ok := <-lines:
			if !ok {
				return batch, ids, rest
			}
			add(l)
		default:
			return batch, ids, rest
		}
	}
	return batch, ids, rest
}

// createBatch creates batch's plants in one CreateBatch and answers each
// line with what its own create would have: created, unchanged, a
// conflict with the stored plant and its ETag, or the failure.
func (im *Importer) createBatch(ctx context.Context, bc plant.BatchCreator, batch []batchLine) {
	ps := make([]plant.Plant, len(batch))
	for i, l := range batch {
		ps[i] = l.plant
	}
	results, err := bc.CreateBatch(ctx, ps)
	if err != nil {
		im.logFailure(ctx, err, ps[0].ID)
	}
	for i, l := range batch {
		switch {
		case err != nil:
			l.p.result = failedResult(ctx, l.p.line, l.plant.ID, err)
		case results[i].Err == nil && results[i].Result == plant.Created:
			im.h.created.Inc()
			l.p.result = resultLine(l.p.line, l.plant.ID, "created")
		case results[i].Err == nil:
			l.p.result = resultLine(l.p.line, l.plant.ID, "unchanged")
		case errors.Is(results[i].Err, plant.ErrConflict):
			l.p.result = conflictLine(l.p.line, results[i].Stored)
		default:
			l.p.result = im.failedLine(ctx, l.p.line, l.plant.ID, results[i].Err)
		}
		close(l.p.done)
	}
}

// recentIDs are the lines started lately, by id. Only the last
// importWindow can still be in flight (the queue's, the writer's and the
// reader's, see serve); older ones are forgotten, so the map stays small
// however long the stream.
type recentIDs struct {
	pending map[int64]*pending
	order   []*pending // a ring of the last importWindow
	next    int
}

// add records p and returns the line before it with the same id, if it
// may still be in flight.
func (r *recentIDs) add(p *pending) *pending {
	const keep = importWindow
	if len(r.order) < keep {
		r.order = append(r.order, p)
	} else {
		old := r.order[r.next]
		if r.pending[old.id] == old {
			delete(r.pending, old.id)
		}
		r.order[r.next] = p
		r.next = (r.next + 1) % keep
	}
	before := r.pending[p.id]
	r.pending[p.id] = p
	return before
}

// lineSubject is what the decoder's messages call the line as a whole
// ("line 3: the line repeats the key /name; ..."), the words of the CLI's
// own check of a file.
const lineSubject = "the line"

// create stores one plant, as POST /plants does, and returns its result
// line. A conflict carries the stored plant and its ETag, so that a client
// can decide to replace it (PUT with If-Match) without another read.
func (im *Importer) create(ctx context.Context, line int, p plant.Plant) []byte {
	for attempt := 0; ; attempt++ {
		res, err := im.h.store.Create(ctx, p)
		switch {
		case err == nil:
			if res == plant.Created {
				im.h.created.Inc()
				return resultLine(line, p.ID, "created")
			}
			return resultLine(line, p.ID, "unchanged")
		case errors.Is(err, plant.ErrConflict):
			stored, gerr := im.h.store.Get(ctx, p.ID)
			if errors.Is(gerr, plant.ErrNotFound) && attempt < 2 {
				continue // deleted since: create again
			}
			if gerr == nil {
				return conflictLine(line, stored)
			}
			err = gerr
		}
		return im.failedLine(ctx, line, p.ID, err)
	}
}

// failedLine is the result of a create the store could not do: the status
// and message a single create would have had (errorStatus: 503 while the
// store is unreachable); the client may send the line again.
func (im *Importer) failedLine(ctx context.Context, line int, id int64, err error) []byte {
	im.logFailure(ctx, err, id)
	return failedResult(ctx, line, id, err)
}

// logFailure logs a failure of the store (a 500) in an import: once per
// failed call, for a batch's as for a single create's.
func (im *Importer) logFailure(ctx context.Context, err error, id int64) {
	if status, _ := errorStatus(ctx, err, id); status == http.StatusInternalServerError {
		im.h.log.Error("store failed in an import", zap.Error(err), zap.Int64("id", id))
	}
}

// failedResult is failedLine's result line.
func failedResult(ctx context.Context, line int, id int64, err error) []byte {
	status, message := errorStatus(ctx, err, id)
	b := append(lineStart(line), `,"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"result":"failed","error":`...)
	b = append(b, httperr.Body(status, message)...)
	return append(b, "}\n"...)
}

func lineStart(line int) []byte {
	return strconv.AppendInt(append(make([]byte, 0, 96), `{"line":`...), int64(line), 10)
}

func resultLine(line int, id int64, result string) []byte {
	b := append(lineStart(line), `,"id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"result":"`...)
	b = append(b, result...)
	return append(b, "\"}\n"...)
}

func conflictLine(line int, stored plant.Plant) []byte {
	b := append(lineStart(line), `,"id":`...)
	b = strconv.AppendInt(b, stored.ID, 10)
	b = append(b, `,"result":"conflict","stored":`...)
	b = appendStoredPlant(b, stored)
	b = append(b, `,"etag":`...)
	b = appendString(b, ETag(stored))
	return append(b, "}\n"...)
}

func refusedLine(line, status int, message string) []byte {
	b := append(lineStart(line), `,"result":"refused","error":`...)
	b = append(b, httperr.Body(status, message)...)
	return append(b, "}\n"...)
}

// writeResults writes each queued result once its create is done, in the
// queue's order, flushing whenever no further result is ready: a result
// reaches the client only after its plant is committed, and a client that
// stops reading stalls the stream (the queue fills, reading stops). A
// failed write (the client gone, or too slow) cancels the stream.
func (im *Importer) writeResults(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, rc *http.ResponseController, queue <-chan *pending) {
	bw := bufio.NewWriterSize(w, 32<<10)
	extended := time.Time{}
	failed := false
	for p := range queue {
		if failed {
			<-p.done // let the create finish before the handler returns
			continue
		}
		select {
		case <-p.done:
		default:
			// Not ready: what is written so far goes out while it commits.
			failed = !im.flush(bw, rc, &extended)
			<-p.done
		}
		if _, err := bw.Write(p.result); err != nil {
			failed = true
		}
		if !failed && len(queue) == 0 {
			failed = !im.flush(bw, rc, &extended)
		}
		if failed {
			cancel()
		}
	}
	if !failed && ctx.Err() == nil {
		im.flush(bw, rc, &extended)
	}
}

func (im *Importer) flush(bw *bufio.Writer, rc *http.ResponseController, extended *time.Time) bool {
	if bw.Buffered() == 0 {
		return true
	}
	if now := time.Now(); now.Sub(*extended) >= deadlineStep {
		_ = rc.SetWriteDeadline(now.Add(im.writeTimeout))
		*extended = now
	}
	return bw.Flush() == nil && rc.Flush() == nil
}

// lineTooLongError is a line longer than the cap.
type lineTooLongError struct{}

func (*lineTooLongError) Error() string { return "line too long" }

// readLine appends the next line of br to buf, without its newline; over
// limit bytes it fails with *lineTooLongError. At the stream's end it
// returns the last line (possibly empty) with io.EOF.
func readLine(br *bufio.Reader, limit int64, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		n := len(chunk)
		if err == nil {
			n-- // the newline, which is not the line's
		}
		if int64(len(buf)+n) > limit {
			return buf, &lineTooLongError{}
		}
		buf = append(buf, chunk[:n]...)
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

// callerID is the id of the request's principal, "" without one.
func callerID(r *http.Request) string {
	if p := principal.FromContext(r.Context()); p != nil {
		return p.ID
	}
	return ""
}
