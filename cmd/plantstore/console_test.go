package main

// The console in a real browser: headless Chromium, driven through the
// DevTools protocol (chromedp), against the real binary on random ports,
// on bolt with a webhook receiver, so that every page has something to
// show. One browser and one server for the whole walk: Chromium is the
// costliest thing a test here starts.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// screenshotsEnv, set to 1, writes the walk's screenshots into
// docs/console too (the README shows them); they are always written to the
// test's artifact directory (go test -artifacts keeps them).
const screenshotsEnv = "PLANTSTORE_CONSOLE_SCREENSHOTS"

// xssPayloads are plant names and tags that would run script if the page
// ever parsed them as HTML; each sets window.__xss or opens a dialog.
var xssPayloads = []string{
	`<img src=x onerror="window.__xss='img';alert('img')">`,
	`<script>window.__xss='script';alert('script')</script>`,
	`"><svg onload="window.__xss='svg'">`,
	`</td><iframe src="javascript:window.top.__xss='iframe'"></iframe>`,
}

// browserWatch records what the browser did that the walk checks at its
// end: every URL it requested, every dialog, every console message.
type browserWatch struct {
	mu       sync.Mutex
	urls     []string
	headers  []string // the requests' headers, as sent by the page
	dialogs  []string
	messages []string
}

func (b *browserWatch) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.urls = append(b.urls, e.Request.URL)
		hdr, _ := json.Marshal(e.Request.Headers)
		b.headers = append(b.headers, e.Request.URL+" "+string(hdr))
	case *page.EventJavascriptDialogOpening:
		b.dialogs = append(b.dialogs, e.Message)
	case *log.EventEntryAdded:
		b.messages = append(b.messages, string(e.Entry.Level)+": "+e.Entry.Text)
	case *runtime.EventConsoleAPICalled:
		b.messages = append(b.messages, "console."+string(e.Type))
	case *runtime.EventExceptionThrown:
		b.messages = append(b.messages, "exception: "+e.ExceptionDetails.Text)
	}
}

func (b *browserWatch) snapshot() (urls, headers, dialogs, messages []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.urls), slices.Clone(b.headers), slices.Clone(b.dialogs), slices.Clone(b.messages)
}

// startBrowser starts headless Chromium for the test and returns its tab.
func startBrowser(t *testing.T, watch *browserWatch) context.Context {
	t.Helper()
	chromium := requireProgram(t, "chromium", "apt-get install chromium")
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1200, 800),
		chromedp.UserDataDir(t.TempDir()),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Listen(ctx, watch.listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	// A dialog would block the page; dismiss each (the walk fails on it
	// at its end, having recorded it).
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx
}

// within bounds one browser step: a hang fails the test, it does not
// stall the suite.
func within(ctx context.Context, t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// evaluate runs expression in the page and decodes its value.
func evaluate[T any](ctx context.Context, t *testing.T, expression string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expression, err)
	}
	return v
}

// waitUntil polls expression in the page until it is true; the bound is a
// bound on a hang, not an expectation.
func waitUntil(ctx context.Context, t *testing.T, what, expression string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expression, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expression, err)
	}
}

// tableText is the text of each cell of each row of a table body.
func tableText(ctx context.Context, t *testing.T, tbody string) [][]string {
	t.Helper()
	return evaluate[[][]string](ctx, t, `[...document.querySelectorAll(`+jsString(tbody+" tr")+`)].map(tr => [...tr.cells].map(td => td.textContent))`)
}

// inputValue sets an input's value as typing would leave it (chromedp's
// SetValue refuses an empty one).
func inputValue(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(document.getElementById(`+jsString(id)+`).value = `+jsString(value)+`) !== null`)(ctx, t)
		return err
	})
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func screenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(cctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s is not a PNG", name)
	}
	dirs := []string{t.ArtifactDir()}
	if os.Getenv(screenshotsEnv) == "1" {
		dirs = append(dirs, filepath.Join("..", "..", "docs", "console"))
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// consolePost creates a plant through the API, failing t unless it is a 200.
func consolePost(t *testing.T, api, body string) {
	t.Helper()
	if err := tryPost(api, body); err != nil {
		t.Fatal(err)
	}
}

func tryPost(api, body string) error {
	req, err := http.NewRequest(http.MethodPost, api+"/plants", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /plants %s = %d, want 200", body, resp.StatusCode)
	}
	return nil
}

// plantBody is a create's body for id, name and tag.
func plantBody(id int64, name, tag string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "name": name, "tag": tag})
	return string(b)
}

// answerPayloads are what the shop endpoint answers with: markup that
// would run script if the page ever parsed a receiver's answer as HTML.
var answerPayloads = []string{
	`<script>window.__xss='answer';alert('answer')</script>`,
	`<img src=x onerror="window.__xss='answer-img';alert('answer-img')">`,
}

// shopFailsOnce is in the body of the one event the shop endpoint fails
// at its first request: plant 700's.
const shopFailsOnce = `"id":700,`

// answeringReceiver is a webhook endpoint that answers with
// answerPayloads: the first request of plant 700's event 500 with the
// first, every other request of it 200 with the second; any other event
// 200 with "ok".
type answeringReceiver struct {
	URL string
	mu  sync.Mutex
	ids []string // the webhook-id of each request of plant 700's event, in arrival order
}

func newAnsweringReceiver(t *testing.T) *answeringReceiver {
	r := &answeringReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if !bytes.Contains(body, []byte(shopFailsOnce)) {
			_, _ = io.WriteString(w, "ok")
			return
		}
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		n := len(r.ids)
		r.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, answerPayloads[0])
			return
		}
		_, _ = io.WriteString(w, answerPayloads[1])
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hooks/shop"
	return r
}

// requests is how many requests of plant 700's event came so far.
func (r *answeringReceiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// waitRequests waits until plant 700's event has had n requests, all
// with the same webhook-id, and returns it.
func (r *answeringReceiver) waitRequests(t *testing.T, n int) string {
	t.Helper()
	poll.Wait(t, 20*time.Millisecond, 90*time.Second, fmt.Sprintf("%d requests of plant 700's event at the shop", n), func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.ids) > n {
			return false, poll.Stop(fmt.Errorf("%d requests of plant 700's event, want %d: %q", len(r.ids), n, r.ids))
		}
		return len(r.ids) == n, nil
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.ids {
		if id != r.ids[0] {
			t.Fatalf("plant 700's event came with webhook-ids %q, want one", r.ids)
		}
	}
	return r.ids[0]
}

func TestConsoleInABrowser(t *testing.T) {
	watch := &browserWatch{}
	ctx := startBrowser(t, watch)

	secret := webhookstest.NewSecret()
	receiver := webhookstest.NewReceiver(t, secret)
	shop := newAnsweringReceiver(t)
	hooks := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeFileAtomically(t, hooks, fmt.Sprintf("endpoints:\n  - name: crm\n    url: %s\n    secrets: [%s]\n  - name: shop\n    url: %s\n    secrets: [%s]\n",
		receiver.URL, secret, shop.URL, secret))
	// A token that may only write, to be told at sign-in that it may not
	// read; one that may read plants but not manage webhooks, to be shown
	// the webhooks page without its actions.
	const writerToken = "console-writer-token-0123456789"
	const readerToken = "console-reader-token-0123456789"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(writerToken+" name=writer plants:write\n"+readerToken+" name=reader plants:read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, append(webhookEnv(hooks), "PLANTSTORE_STORE=bolt", "PLANTSTORE_LOG_LEVEL=debug", "PLANTSTORE_TOKENS_FILE="+tokens,
		"PLANTSTORE_WEBHOOKS_API=true")...)

	type seeded struct {
		id        int64
		name, tag string
	}
	seeds := []seeded{
		{1, "Monstera deliciosa", "tropical"},
		{2, "Ficus lyrata", "tropical"},
		{3, "Aloe vera", "succulent"},
		{4, "Echeveria elegans", "succulent"},
		{5, "Nephrolepis exaltata", "fern"},
	}
	for i, payload := range xssPayloads {
		seeds = append(seeds, seeded{int64(900 + i), payload, xssPayloads[(i+1)%len(xssPayloads)]})
	}
	for _, s := range seeds {
		consolePost(t, p.API, plantBody(s.id, s.name, s.tag))
	}

	t.Run("sign in", func(t *testing.T) {
		within(ctx, t, "open the console", chromedp.Navigate(p.API+"/console"), chromedp.WaitVisible(chromedp.ID("token")))
		screenshot(ctx, t, "sign-in")
		// A wrong token is refused and the page says so.
		within(ctx, t, "sign in with a wrong token",
			chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
			chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
		waitUntil(ctx, t, "the refusal", `document.getElementById("login-error").textContent.includes("not valid")`)
		within(ctx, t, "sign in with a token that may not read",
			chromedp.SendKeys(chromedp.ID("token"), writerToken),
			chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
		waitUntil(ctx, t, "the scope's refusal", `document.getElementById("login-error").textContent === "This token may not read plants (it lacks the scope plants:read)."`)
		if shown := evaluate[bool](ctx, t, `document.getElementById("plants").hidden && !document.getElementById("login").hidden`); !shown {
			t.Fatal("a token without plants:read left the sign-in page")
		}
		within(ctx, t, "sign in", chromedp.SendKeys(chromedp.ID("token"), testToken), chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
		waitUntil(ctx, t, "the plants page", `document.querySelectorAll("#plants-rows tr").length === `+fmt.Sprint(len(seeds)))
	})

	t.Run("plants", func(t *testing.T) {
		var want [][]string
		for _, s := range seeds {
			want = append(want, []string{fmt.Sprint(s.id), s.name, s.tag})
		}
		if got := tableText(ctx, t, "#plants-rows"); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("plants page rows\n got %q\nwant %q", got, want)
		}
		screenshot(ctx, t, "plants")

		within(ctx, t, "filter by tag",
			inputValue("plants-tag", "succulent"),
			chromedp.Click(chromedp.CSS("#plants-filter button[type=submit]")))
		waitUntil(ctx, t, "the succulents", `document.querySelectorAll("#plants-rows tr").length === 2`)
		want = [][]string{{"3", "Aloe vera", "succulent"}, {"4", "Echeveria elegans", "succulent"}}
		if got := tableText(ctx, t, "#plants-rows"); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("tag=succulent rows\n got %q\nwant %q", got, want)
		}

		// Pages of 20: the first holds 9 plants and no next page.
		within(ctx, t, "list all again",
			inputValue("plants-tag", ""),
			chromedp.Click(chromedp.CSS("#plants-filter button[type=submit]")))
		waitUntil(ctx, t, "every plant", `document.querySelectorAll("#plants-rows tr").length === `+fmt.Sprint(len(seeds)))
		if next := evaluate[bool](ctx, t, `document.getElementById("plants-next").disabled`); !next {
			t.Fatal("Next page is enabled on the only page")
		}
	})

	t.Run("one plant", func(t *testing.T) {
		// Replace plant 1, so that its history holds two changes.
		req, _ := http.NewRequest(http.MethodPut, p.API+"/plants/1", strings.NewReader(`{"name":"Monstera","tag":"tropical"}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		etag := resp.Header.Get("ETag")
		if resp.StatusCode != http.StatusOK || etag == "" {
			t.Fatalf("PUT /plants/1 = %d, ETag %q", resp.StatusCode, etag)
		}
		within(ctx, t, "open plant 1", chromedp.Click(chromedp.CSS(`#plants-rows tr[data-id="1"]`)))
		waitUntil(ctx, t, "plant 1's history", `document.querySelectorAll("#plant-history tr").length === 2`)
		facts := evaluate[[]string](ctx, t, `["plant-id","plant-name","plant-tag","plant-etag"].map(id => document.getElementById(id).textContent)`)
		if want := []string{"1", "Monstera", "tropical", etag}; !slices.Equal(facts, want) {
			t.Fatalf("plant page shows %q, want %q", facts, want)
		}
		history := tableText(ctx, t, "#plant-history")
		if history[0][1] != "plant.updated" || history[0][3] != "Monstera" || history[1][1] != "plant.created" || history[1][3] != "Monstera deliciosa" {
			t.Fatalf("plant 1's history = %q, want its update then its create, newest first", history)
		}
		screenshot(ctx, t, "plant")

		// A plant named with a payload shows it as its name.
		within(ctx, t, "open plant 900", chromedp.Navigate(p.API+"/console#/plants/900"))
		waitUntil(ctx, t, "plant 900's history", `document.querySelectorAll("#plant-history tr").length === 1`)
		if got := evaluate[string](ctx, t, `document.getElementById("plant-name").textContent`); got != xssPayloads[0] {
			t.Fatalf("plant 900's name shows %q, want %q", got, xssPayloads[0])
		}
	})

	t.Run("live feed", func(t *testing.T) {
		within(ctx, t, "open the feed", chromedp.Navigate(p.API+"/console#/feed"))
		waitUntil(ctx, t, "the stream", `document.getElementById("feed-status").textContent === "live"`)
		// The stream starts at now: none of the seeds is shown. A plant
		// created through the API appears.
		consolePost(t, p.API, plantBody(100, "Calathea orbifolia", "tropical"))
		waitUntil(ctx, t, "plant 100 in the feed", `document.querySelector('#feed-rows tr[data-id="100"]') !== null`)
		consolePost(t, p.API, plantBody(901+int64(len(xssPayloads)), xssPayloads[1], xssPayloads[0]))
		waitUntil(ctx, t, "the payload plant in the feed", `document.querySelectorAll("#feed-rows tr").length === 2`)
		rows := tableText(ctx, t, "#feed-rows")
		if rows[0][1] != "plant.created" || rows[0][3] != xssPayloads[1] || rows[0][4] != xssPayloads[0] ||
			rows[1][1] != "plant.created" || rows[1][2] != "100" || rows[1][3] != "Calathea orbifolia" || rows[1][4] != "tropical" {
			t.Fatalf("feed rows = %q", rows)
		}

		// Paused, the page shows nothing new; resumed, it follows on from
		// where it paused and misses nothing.
		within(ctx, t, "pause", chromedp.Click(chromedp.ID("feed-pause")))
		waitUntil(ctx, t, "paused", `document.getElementById("feed-status").textContent === "paused"`)
		consolePost(t, p.API, plantBody(101, "Pilea peperomioides", "china"))
		if n := evaluate[int](ctx, t, `document.querySelectorAll("#feed-rows tr").length`); n != 2 {
			t.Fatalf("a paused feed shows %d rows, want 2", n)
		}
		within(ctx, t, "resume", chromedp.Click(chromedp.ID("feed-pause")))
		waitUntil(ctx, t, "plant 101 after the resume", `document.querySelector('#feed-rows tr[data-id="101"]') !== null`)

		// A filter on the tag: only the tag's changes come.
		within(ctx, t, "filter the feed",
			inputValue("feed-tag", "fern"),
			chromedp.Click(chromedp.CSS("#feed-filter button[type=submit]")))
		waitUntil(ctx, t, "the filtered stream", `document.getElementById("feed-status").textContent === "live" && document.querySelectorAll("#feed-rows tr").length === 0`)
		consolePost(t, p.API, plantBody(102, "Adiantum raddianum", "not-fern"))
		consolePost(t, p.API, plantBody(103, "Asplenium nidus", "fern"))
		waitUntil(ctx, t, "plant 103 in the filtered feed", `document.querySelector('#feed-rows tr[data-id="103"]') !== null`)
		if rows := tableText(ctx, t, "#feed-rows"); len(rows) != 1 || rows[0][2] != "103" {
			t.Fatalf("the feed filtered on tag fern shows %q, want plant 103 alone", rows)
		}
		within(ctx, t, "unfilter the feed",
			inputValue("feed-tag", ""),
			chromedp.Click(chromedp.CSS("#feed-filter button[type=submit]")))
		waitUntil(ctx, t, "the stream", `document.getElementById("feed-status").textContent === "live"`)
		for i, name := range []string{"Philodendron", "Hoya carnosa", "Sansevieria"} {
			consolePost(t, p.API, plantBody(int64(110+i), name, "tropical"))
		}
		waitUntil(ctx, t, "the last three plants", `document.querySelectorAll("#feed-rows tr").length === 3`)
		screenshot(ctx, t, "feed")
	})

	t.Run("figures", func(t *testing.T) {
		// Creates keep coming while the figures are sampled, so that the
		// create rate and the delivery latency have points.
		done := make(chan struct{})
		var creates sync.WaitGroup
		creates.Go(func() {
			for id := int64(200); ; id++ {
				select {
				case <-done:
					return
				case <-time.After(200 * time.Millisecond):
				}
				if err := tryPost(p.API, plantBody(id, fmt.Sprint("plant ", id), "load")); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
			}
		})
		stopCreates := sync.OnceFunc(func() { close(done); creates.Wait() })
		defer stopCreates()
		within(ctx, t, "open the figures", chromedp.Navigate(p.API+"/console#/figures"))
		plots := []string{"plot-created", "plot-latency", "plot-delivery", "plot-backlog"}
		for _, canvas := range plots {
			waitUntil(ctx, t, canvas+"'s points", `Number(document.getElementById("`+canvas+`").dataset.points) >= 2`)
		}
		stopCreates()
		// Each plot drew its series: pixels of the first series' colour
		// below the legend.
		for _, canvas := range plots {
			n := evaluate[int](ctx, t, `(() => {
				const c = document.getElementById("`+canvas+`");
				const d = c.getContext("2d").getImageData(0, 24, c.width, c.height - 24).data;
				let n = 0;
				// #2f7d4a, or its antialiased blend with the white ground
				for (let i = 0; i < d.length; i += 4) if (d[i+3] > 0 && d[i+1] - d[i] > 20 && d[i+1] > d[i+2]) n++;
				return n;
			})()`)
			if n < 10 {
				t.Fatalf("%s has %d pixels of its first series' colour below its legend: no line drawn", canvas, n)
			}
		}
		screenshot(ctx, t, "figures")
	})

	var shopMessage string // the webhook-id of plant 700's event for the shop
	t.Run("webhooks", func(t *testing.T) {
		consolePost(t, p.API, plantBody(700, "Strelitzia nicolai", "tropical"))
		shopMessage = shop.waitRequests(t, 2) // answered 500, then 200
		within(ctx, t, "open the webhooks", chromedp.Navigate(p.API+"/console#/webhooks"))
		waitUntil(ctx, t, "the endpoints", `document.querySelector('#webhooks-rows tr[data-endpoint="shop"]') !== null && document.querySelectorAll("#webhooks-endpoints tr").length === 2`)
		rows := tableText(ctx, t, "#webhooks-rows")
		if len(rows) != 2 || rows[0][0] != "crm" || rows[0][1] != "healthy" || !strings.Contains(rows[0][5], "delivered ") || rows[1][0] != "shop" {
			t.Fatalf("webhooks rows = %q, want crm, healthy, with delivered attempts, then shop", rows)
		}
		want := [][]string{
			{"crm", "file", receiver.URL, "enabled", "plant.created"},
			{"shop", "file", shop.URL, "enabled", "plant.created"},
		}
		if got := tableText(ctx, t, "#webhooks-endpoints"); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("endpoints rows\n got %q\nwant %q", got, want)
		}
		if hidden := evaluate[bool](ctx, t, `document.getElementById("webhooks-scope").hidden && document.getElementById("webhooks-actions").hidden`); !hidden {
			t.Fatal("the webhooks page shows a scope note or attempts before an endpoint is opened")
		}
	})

	t.Run("attempts and redelivery", func(t *testing.T) {
		if shopMessage == "" {
			t.Fatal("plant 700's event never reached the shop")
		}
		ofMessage := func(selector string) string {
			return jsString(`#webhooks-attempts tr[data-webhook-id=` + jsString(shopMessage) + `]` + selector)
		}
		within(ctx, t, "open the shop's attempts", chromedp.Click(chromedp.CSS(`#webhooks-endpoints tr[data-id="shop"]`)))
		waitUntil(ctx, t, "plant 700's two attempts", `document.querySelectorAll(`+ofMessage("")+`).length === 2`)
		messageRows := func() [][]string {
			t.Helper()
			return evaluate[[][]string](ctx, t, `[...document.querySelectorAll(`+ofMessage("")+`)].map(tr => [...tr.cells].map((td, i) => i === 0 || i === 4 ? "" : td.textContent))`)
		}
		// Newest first: the retry answered 200, the first attempt 500;
		// each receiver's answer shows as the characters it sent.
		want := [][]string{
			{"", shopMessage, "2", "200 succeeded", "", answerPayloads[1], "Redeliver"},
			{"", shopMessage, "1", "500 failed", "", answerPayloads[0], "Redeliver"},
		}
		if got := messageRows(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("plant 700's attempts (time and latency left out)\n got %q\nwant %q", got, want)
		}
		if n := evaluate[int](ctx, t, `document.querySelectorAll("#webhooks-attempts script, #webhooks-attempts img, #webhooks-attempts svg").length`); n != 0 {
			t.Fatalf("%d elements made of a receiver's answer in the attempts", n)
		}
		filter := func(status string) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := chromedp.Evaluate[bool](`(() => { const s = document.getElementById("webhooks-status"); s.value = `+jsString(status)+`; s.dispatchEvent(new Event("change")); return true; })()`)(ctx, tg)
				return err
			})
		}
		within(ctx, t, "show the failed attempts", filter("failed"))
		waitUntil(ctx, t, "the failed attempts alone", `document.querySelectorAll(`+ofMessage("")+`).length === 1 && document.querySelectorAll("#webhooks-attempts tr.succeeded").length === 0`)
		if got := messageRows(); !slices.EqualFunc(got, want[1:], slices.Equal) {
			t.Fatalf("plant 700's failed attempts\n got %q\nwant %q", got, want[1:])
		}
		within(ctx, t, "show the succeeded attempts", filter("succeeded"))
		waitUntil(ctx, t, "the succeeded attempts alone", `document.querySelectorAll(`+ofMessage("")+`).length === 1 && document.querySelectorAll("#webhooks-attempts tr.failed").length === 0`)
		if got := messageRows(); !slices.EqualFunc(got, want[:1], slices.Equal) {
			t.Fatalf("plant 700's succeeded attempts\n got %q\nwant %q", got, want[:1])
		}
		within(ctx, t, "show every attempt", filter(""))
		waitUntil(ctx, t, "plant 700's two attempts", `document.querySelectorAll(`+ofMessage("")+`).length === 2`)

		// Redeliver sends the message again, under its webhook-id, and its
		// new attempt (numbered 1 again) appears on top.
		within(ctx, t, "redeliver plant 700's event", chromedp.Click(chromedp.CSS(`#webhooks-attempts tr[data-webhook-id=`+jsString(shopMessage)+`] button.redeliver`)))
		shop.waitRequests(t, 3)
		waitUntil(ctx, t, "the redelivery's attempt", `document.querySelectorAll(`+ofMessage("")+`).length === 3`)
		want = append([][]string{{"", shopMessage, "1", "200 succeeded", "", answerPayloads[1], "Redeliver"}}, want...)
		if got := messageRows(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("plant 700's attempts after the redelivery\n got %q\nwant %q", got, want)
		}
		if note := evaluate[string](ctx, t, `document.getElementById("webhooks-note").textContent`); note != "queued again: "+shopMessage {
			t.Fatalf("the note after Redeliver = %q", note)
		}
	})

	t.Run("webhooks without webhooks:manage", func(t *testing.T) {
		within(ctx, t, "forget the token", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
		within(ctx, t, "open an endpoint's attempts", chromedp.Navigate(p.API+"/console#/webhooks/shop"))
		within(ctx, t, "sign in with a token that may not manage webhooks",
			chromedp.SendKeys(chromedp.ID("token"), readerToken),
			chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
		waitUntil(ctx, t, "the scope's note", `document.getElementById("webhooks-scope").textContent === "This token lacks the scope webhooks:manage, which the endpoints, their attempts and redelivery need." && !document.getElementById("webhooks-scope").hidden`)
		waitUntil(ctx, t, "the health figures", `document.querySelectorAll("#webhooks-rows tr").length === 2`)
		shown := evaluate[[]bool](ctx, t, `["webhooks-endpoints-table", "webhooks-actions"].map(id => !document.getElementById(id).hidden)
			.concat([document.querySelectorAll("button.redeliver, #webhooks-attempts tr, #webhooks-endpoints tr").length > 0])`)
		if !slices.Equal(shown, []bool{false, false, false}) {
			t.Fatalf("a token without webhooks:manage is shown the endpoints table, the attempts, or their rows and buttons: %v", shown)
		}
		// The page only hides what the API refuses.
		req, _ := http.NewRequest(http.MethodGet, p.API+"/webhooks/endpoints", nil)
		req.Header.Set("Authorization", "Bearer "+readerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET /webhooks/endpoints with a token without webhooks:manage = %d, want 403", resp.StatusCode)
		}
		req, _ = http.NewRequest(http.MethodPost, p.API+"/webhooks/messages/"+shopMessage+"/redeliver", nil)
		req.Header.Set("Authorization", "Bearer "+readerToken)
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("POST /webhooks/messages/%s/redeliver with a token without webhooks:manage = %d, want 403", shopMessage, resp.StatusCode)
		}
		within(ctx, t, "forget the token", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
		within(ctx, t, "sign in again", chromedp.SendKeys(chromedp.ID("token"), testToken), chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
		waitUntil(ctx, t, "the endpoints and the shop's attempts", `document.querySelectorAll("#webhooks-endpoints tr").length === 2 && document.getElementById("webhooks-scope").hidden && document.querySelectorAll(`+jsString(`#webhooks-attempts tr[data-webhook-id=`+jsString(shopMessage)+`]`)+`).length === 3`)
		if n := shop.requests(); n != 3 {
			t.Fatalf("the shop saw plant 700's event %d times, want 3: a refused redelivery sent it", n)
		}
		screenshot(ctx, t, "webhooks")
	})

	t.Run("nothing ran", func(t *testing.T) {
		if flag := evaluate[string](ctx, t, `String(window.__xss)`); flag != "undefined" {
			t.Fatalf("window.__xss = %s: a payload ran", flag)
		}
		_, _, dialogs, messages := watch.snapshot()
		if len(dialogs) > 0 {
			t.Fatalf("dialogs opened: %q", dialogs)
		}
		for _, m := range messages {
			// The page obeys its own policy: a violation means a payload
			// became markup, or the page needs something the policy forbids.
			if strings.Contains(m, "Content Security Policy") || strings.HasPrefix(m, "exception") {
				t.Fatalf("browser console: %s (all: %q)", m, messages)
			}
		}
	})

	t.Run("the token stays in the headers", func(t *testing.T) {
		urls, headers, _, _ := watch.snapshot()
		if len(urls) == 0 {
			t.Fatal("no request was seen")
		}
		authorized := 0
		for _, u := range urls {
			if strings.Contains(u, testToken) || strings.Contains(u, writerToken) || strings.Contains(u, readerToken) {
				t.Fatalf("the token is in a requested URL: %s", u)
			}
		}
		for _, h := range headers {
			if strings.Contains(h, testToken) {
				authorized++
				if !strings.HasPrefix(h, p.API+"/plants") && !strings.HasPrefix(h, p.API+"/console/api/") && !strings.HasPrefix(h, p.API+"/webhooks/") {
					t.Fatalf("the token was sent with a request outside the API: %s", h)
				}
			}
		}
		if authorized == 0 {
			t.Fatal("no request carried the token: the walk did not use the API")
		}
		cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.API + "/console", p.API + "/plants"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(cookies.Cookies) != 0 {
			t.Fatalf("the console set cookies: %v", cookies.Cookies)
		}
		html := evaluate[string](ctx, t, `document.documentElement.outerHTML`)
		if strings.Contains(html, testToken) {
			t.Fatal("the token is in the page's HTML")
		}
		if !strings.Contains(html, "Monstera") && !strings.Contains(html, "crm") {
			t.Fatal("the page's HTML holds no data: the check read the wrong page")
		}
		if out := p.Output(); strings.Contains(out, testToken) || strings.Contains(out, writerToken) || strings.Contains(out, readerToken) || !strings.Contains(out, `"/console/api/figures"`) {
			t.Fatalf("the server's log holds the token, or no line of the console's requests:\n%s", out)
		}
		// Forgetting the token leaves nothing in the tab.
		within(ctx, t, "forget the token", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
		if stored := evaluate[int](ctx, t, `sessionStorage.length + localStorage.length`); stored != 0 {
			t.Fatalf("%d items left in the tab's storage after Forget token", stored)
		}
	})
}
