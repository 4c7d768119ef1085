package main

// Webhooks from the real binary to real receivers on loopback: every create
// answered 200 is delivered to the endpoint across SIGKILLs (receiver up or
// down meanwhile), on bolt and on PostgreSQL, and across two PostgreSQL
// replicas when one is killed mid-flight; the file reloads; the delivery
// joins the create's trace.

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// writeWebhooksFile writes a webhooks file naming each receiver, as an
// operator's tool would: to a temporary name, then renamed into place.
func writeWebhooksFile(t *testing.T, path, secret string, receivers map[string]*webhookstest.Receiver) {
	t.Helper()
	writeWebhooksFileWithFormats(t, path, secret, receivers, nil)
}

// writeWebhooksFileWithFormats is writeWebhooksFile with the format of
// some endpoints (none written for the others).
func writeWebhooksFileWithFormats(t *testing.T, path, secret string, receivers map[string]*webhookstest.Receiver, formats map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("endpoints:\n")
	for _, name := range slices.Sorted(maps.Keys(receivers)) {
		fmt.Fprintf(&b, "  - name: %s\n    url: %s\n    secrets: [%s]\n", name, receivers[name].URL, secret)
		if f := formats[name]; f != "" {
			fmt.Fprintf(&b, "    format: %s\n", f)
		}
	}
	writeFileAtomically(t, path, b.String())
}

func writeFileAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// webhooksConfig is an in-process bolt config sending webhooks to a live
// receiver on loopback, for the tests that read the webhook metrics.
func webhooksConfig(t *testing.T) config {
	t.Helper()
	cfg := storeConfig(t, plants.StoreBolt)
	secret := webhookstest.NewSecret()
	cfg.Webhooks.File = filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, cfg.Webhooks.File, secret, map[string]*webhookstest.Receiver{"crm": webhookstest.NewReceiver(t, secret)})
	cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowHTTP = true, true
	return cfg
}

// webhookEnv sends to the test's loopback receivers, and retries every
// half second for a minute and a half: a receiver that is down through a
// few crash cycles is waited for, not dead-lettered.
func webhookEnv(file string) []string {
	return []string{
		"PLANTSTORE_WEBHOOKS_FILE=" + file,
		"PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE=true",
		"PLANTSTORE_WEBHOOKS_ALLOW_HTTP=true",
		"PLANTSTORE_WEBHOOKS_POLL_INTERVAL=50ms",
		"PLANTSTORE_WEBHOOKS_TIMEOUT=2s",
		"PLANTSTORE_WEBHOOKS_RETRY_SCHEDULE=" + strings.TrimSuffix(strings.Repeat("500ms,", 180), ","),
	}
}

// deliveredPlants checks what r got against what was sent: every 2xx'd
// request is one plant's event, its body exactly that plant, one webhook-id
// per plant (a plant's event is written once); it returns the plants'
// ids and how many requests delivered an id again.
func deliveredPlants(t *testing.T, r *webhookstest.Receiver, sent map[int64]plant.Plant) (ids map[int64]bool, duplicates int) {
	t.Helper()
	ids = map[int64]bool{}
	idOf := map[string]int64{}    // webhook-id: plant id
	eventOf := map[int64]string{} // plant id: webhook-id
	for _, req := range r.Requests() {
		if req.Status != http.StatusOK {
			continue
		}
		if !req.Verified {
			t.Fatalf("request %s: signature did not verify", req.ID)
		}
		if _, seen := idOf[req.ID]; seen {
			duplicates++
			continue
		}
		var id int64
		if _, err := fmt.Sscanf(string(req.Body), `{"id":%d,`, &id); err != nil {
			t.Fatalf("request %s: body %s", req.ID, req.Body)
		}
		p, ok := sent[id]
		if !ok || string(req.Body) != plantJSON(p) {
			t.Fatalf("request %s: body %s was never sent as a plant (sent: %s)", req.ID, req.Body, plantJSON(p))
		}
		if other, ok := eventOf[id]; ok {
			t.Fatalf("plant %d was announced by two events, %s and %s", id, other, req.ID)
		}
		idOf[req.ID], eventOf[id] = id, req.ID
		ids[id] = true
	}
	return ids, duplicates
}

// waitForDeliveries waits, looking every 50 ms, until every acknowledged
// plant has been delivered to r.
func waitForDeliveries(t *testing.T, r *webhookstest.Receiver, sent, acked map[int64]plant.Plant, within time.Duration) (map[int64]bool, int) {
	t.Helper()
	var ids map[int64]bool
	var dups int
	poll.Wait(t, 50*time.Millisecond, within, "every acknowledged create delivered", func() (bool, error) {
		ids, dups = deliveredPlants(t, r, sent)
		missing := 0
		for id := range acked {
			if !ids[id] {
				missing++
			}
		}
		return missing == 0, fmt.Errorf("%d of %d acknowledged creates not delivered", missing, len(acked))
	})
	return ids, dups
}

// checkDeliveredAreStored: a delivered plant that was not acknowledged (its
// answer was lost to the kill) must be stored, as its event was written in
// its commit.
func checkDeliveredAreStored(t *testing.T, api string, delivered map[int64]bool, sent, acked map[int64]plant.Plant) {
	t.Helper()
	for id := range delivered {
		if _, ok := acked[id]; ok {
			continue
		}
		resp, err := http.DefaultClient.Do(authed(t, http.MethodGet, fmt.Sprintf("%s/plants/%d", api, id)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("plant %d was delivered but GET answers %d: an event without its plant", id, resp.StatusCode)
		}
	}
}

func authed(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

// runWebhookCrashCycles kills a loaded plantstore three times, then starts
// it once more and waits for every acknowledged create to reach the origin
// endpoint, and every acknowledged create, rename and delete to reach the
// envelope endpoint, in version order per plant. From the second cycle on,
// a client renames and deletes plants of the earlier cycles while the
// creates run. With receiverDown the receivers are down until that last
// start.
func runWebhookCrashCycles(t *testing.T, storeEnv []string, receiverDown bool) {
	secret := webhookstest.NewSecret()
	r, feed := webhookstest.NewReceiver(t, secret), webhookstest.NewReceiver(t, secret)
	if receiverDown {
		r.Down()
		feed.Down()
	}
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFileWithFormats(t, file, secret, map[string]*webhookstest.Receiver{"crm": r, "feed": feed}, map[string]string{"feed": "envelope"})
	env := slices.Concat(storeEnv, webhookEnv(file))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	sent, acked := map[int64]plant.Plant{}, map[int64]plant.Plant{}
	history := newPlantHistory()
	for cycle := range 3 {
		p := startProcess(t, env...)
		load := startAPILoad(p.API, int64(cycle+1), 4, 500)
		var changes *changeLoad
		if cycle > 0 {
			changes = startChangeLoad(p.API, cycle, history.targets(150))
		}
		load.waitFor(t, "100 answers 200", func(s map[int]int) bool { return s[http.StatusOK] >= 100 })
		if receiverDown && cycle == 0 {
			checkCircuitOpens(t, p.Admin, load)
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Wait(t, 30*time.Second)
		res := load.wait()
		maps.Copy(sent, res.sent)
		maps.Copy(acked, res.acked)
		history.created(res.acked)
		if changes != nil {
			history.changed(changes.wait(t))
		}
		t.Logf("cycle %d: %d creates answered 200 before SIGKILL, %d delivered so far; acknowledged changes so far %v",
			cycle, len(res.acked), len(r.Delivered()), history.count())
	}
	if n := history.count(); n["plant.updated"] == 0 || n["plant.deleted"] == 0 {
		t.Fatalf("acknowledged changes %v: the test needs renames and deletes", n)
	}
	if receiverDown {
		if n := len(r.Requests()) + len(feed.Requests()); n != 0 {
			t.Fatalf("the receivers were down but recorded %d requests", n)
		}
		r.Up(t)
		feed.Up(t)
	}
	p := startProcess(t, env...)
	delivered, dups := waitForDeliveries(t, r, sent, acked, 90*time.Second)
	checkDeliveredAreStored(t, p.API, delivered, sent, acked)
	waitForChanges(t, feed, history, 90*time.Second)
	t.Logf("%d acknowledged creates, %d delivered (%d not acknowledged: their answer was cut by the kill), %d duplicate deliveries; "+
		"the envelope endpoint got every acknowledged change %v in version order", len(acked), len(delivered), len(delivered)-len(acked), dups, history.count())
}

// checkCircuitOpens holds a down receiver's endpoint to its circuit: it
// opens, and while hundreds of plants are created their events are not
// each attempted: 10 failures open it, the attempts then in flight and the
// handoffs then waiting (16 each by default) fail too, and a probe goes
// out every half second or more.
func checkCircuitOpens(t *testing.T, admin string, load *apiLoad) {
	t.Helper()
	eventually(t, 30*time.Second, "the endpoint's circuit to open", func() bool {
		return adminMetric(t, admin, `plantstore_webhook_endpoint_circuit_open{endpoint="crm"}`) == 1
	})
	load.waitFor(t, "500 answers 200", func(s map[int]int) bool { return s[http.StatusOK] >= 500 })
	failed := adminMetric(t, admin, `plantstore_webhook_attempts_total{endpoint="crm",outcome="error",status_class="none"}`)
	if failed < 10 || failed >= 100 {
		t.Fatalf("%v failed attempts after 500 creates with the receiver down, want 10 to 99: the circuit should have stopped them", failed)
	}
}

// adminMetric is series' value on admin's /metrics, or -1 without it.
func adminMetric(t *testing.T, admin, series string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

func TestWebhooksSurviveSIGKILL(t *testing.T) {
	for _, store := range []string{"bolt", "postgres"} {
		for _, down := range []bool{false, true} {
			name := store + "/receiver up"
			if down {
				name = store + "/receiver down"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // each case has its receivers, data and processes
				env := []string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + t.TempDir()}
				if store == "postgres" {
					env = []string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + pgtest.NewDatabase(t)}
				}
				runWebhookCrashCycles(t, env, down)
			})
		}
	}
}

// Two replicas share one database and one outbox; one is killed while
// attempts are in flight (the receiver answers slowly). The survivor
// delivers everything, the killed one's leased events once their lease
// ends.
func TestWebhooksTwoPostgresReplicasOneKilled(t *testing.T) {
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	r.SetAnswer(func(webhookstest.Request, int) (int, http.Header) {
		time.Sleep(20 * time.Millisecond)
		return http.StatusOK, nil
	})
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"crm": r})
	env := append([]string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + pgtest.NewDatabase(t)}, webhookEnv(file)...)
	a, b := startProcess(t, env...), startProcess(t, env...)
	loadA, loadB := startAPILoad(a.API, 1, 4, 150), startAPILoad(b.API, 2, 4, 150)
	loadA.waitFor(t, "100 answers 200 from the first replica", func(s map[int]int) bool { return s[http.StatusOK] >= 100 })
	if err := a.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.Wait(t, 30*time.Second)
	resA := loadA.wait()
	loadB.wg.Wait() // its clients send their whole bound
	resB := loadB.wait()
	sent, acked := maps.Clone(resA.sent), maps.Clone(resA.acked)
	maps.Copy(sent, resB.sent)
	maps.Copy(acked, resB.acked)
	if len(resB.acked) != 600 {
		t.Fatalf("the surviving replica answered %d creates 200, want all 600", len(resB.acked))
	}
	delivered, dups := waitForDeliveries(t, r, sent, acked, 90*time.Second)
	checkDeliveredAreStored(t, b.API, delivered, sent, acked)
	t.Logf("%d acknowledged creates (%d by the killed replica), all delivered; %d duplicate deliveries", len(acked), len(resA.acked), dups)
}

// The file is watched: a broken rewrite keeps the endpoints, an added
// endpoint gets the plants created after it, a removed one gets no more.
func TestWebhooksFileReloads(t *testing.T) {
	secret := webhookstest.NewSecret()
	one, two := webhookstest.NewReceiver(t, secret), webhookstest.NewReceiver(t, secret)
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"one": one})
	p := startProcess(t, append([]string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + t.TempDir()}, webhookEnv(file)...)...)
	create := func(id int64) {
		t.Helper()
		if status, err := postPlant(http.DefaultClient, p.API, plant.Plant{ID: id, Name: "p"}); err != nil || status != http.StatusOK {
			t.Fatalf("create %d = %d, %v", id, status, err)
		}
	}
	got := func(r *webhookstest.Receiver) string {
		var bodies []string
		for _, body := range r.Delivered() {
			bodies = append(bodies, string(body))
		}
		slices.Sort(bodies)
		return strings.Join(bodies, " ")
	}
	create(1)
	eventually(t, 20*time.Second, "plant 1 at endpoint one", func() bool { return got(one) == `{"id":1,"name":"p"}` })

	writeFileAtomically(t, file, "endpoints: [{name: one, url: "+one.URL+", secrets: []}]\n")
	eventually(t, 20*time.Second, "the broken file refused", func() bool {
		return strings.Contains(p.Output(), `"msg":"webhooks file not reloaded; keeping the current endpoints"`)
	})
	if strings.Contains(p.Output(), strings.TrimPrefix(secret, "whsec_")) {
		t.Fatal("the log shows the secret")
	}
	create(2)
	eventually(t, 20*time.Second, "plant 2 at endpoint one", func() bool {
		return got(one) == `{"id":1,"name":"p"} {"id":2,"name":"p"}`
	})

	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"one": one, "two": two})
	eventually(t, 20*time.Second, "the file reloaded", func() bool { return strings.Contains(p.Output(), `"msg":"webhooks file reloaded"`) })
	create(3)
	eventually(t, 20*time.Second, "plant 3 at both", func() bool {
		return strings.Contains(got(one), `{"id":3,`) && got(two) == `{"id":3,"name":"p"}`
	})

	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"two": two})
	eventually(t, 20*time.Second, "the file reloaded again", func() bool {
		return strings.Count(p.Output(), `"msg":"webhooks file reloaded"`) >= 2
	})
	create(4)
	eventually(t, 20*time.Second, "plant 4 at two", func() bool { return strings.Contains(got(two), `{"id":4,`) })
	if strings.Contains(got(one), `{"id":4,`) {
		t.Fatal("the removed endpoint got plant 4")
	}
}

// The delivery joins the create's trace: its traceparent carries the
// create's trace id, and its span is exported under it.
func TestWebhookJoinsTheCreatesTrace(t *testing.T) {
	rcv := startOTLPReceiver(t)
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"crm": r})
	env := append([]string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + t.TempDir(),
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}, webhookEnv(file)...)
	p := startProcess(t, env...)
	tc := newTraceContext(t)
	req := plantRequest(p.API, plant.Plant{ID: 1, Name: "traced"})
	req.Header.Set("traceparent", tc.traceparent())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("traced create: %v %v", resp, err)
	}
	resp.Body.Close()
	eventually(t, 20*time.Second, "the delivery", func() bool { return len(r.Delivered()) == 1 })
	parent := r.Requests()[0].Header.Get("traceparent")
	if !strings.HasPrefix(parent, "00-"+tc.traceID+"-") {
		t.Fatalf("the delivery's traceparent %q is not in the create's trace %s", parent, tc.traceID)
	}
	eventually(t, 20*time.Second, "the webhook span exported in the create's trace", func() bool {
		spans, _ := rcv.trace(tc.traceID)
		for _, s := range spans {
			if s.GetName() == "webhook plant.created" && strings.Contains(parent, hex.EncodeToString(s.GetSpanId())) {
				return true
			}
		}
		return false
	})
}

// The webhook metrics pass promtool and count a delivery.
func TestWebhookMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool := requireProgram(t, "promtool", "apt-get install prometheus")
	s := startServer(t, webhooksConfig(t))
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var text string
	defer func() {
		if t.Failed() {
			t.Logf("last scrape's webhook series:\n%s", grepLines(text, "plantstore_webhook"))
		}
	}()
	// The outbox gauges are read every 5 s; the bound is generous for a
	// loaded machine, not an expectation.
	eventually(t, 60*time.Second, "the delivery counted and the outbox read empty", func() bool {
		text = scrape(t, s, false)
		return strings.Contains(text, `plantstore_webhook_attempts_total{endpoint="crm",outcome="delivered",status_class="2xx"} 1`) &&
			strings.Contains(text, `plantstore_webhook_pending{endpoint="crm"} 0`)
	})
	checkMetrics(t, promtool, text)
	for _, series := range []string{
		`plantstore_webhook_delivery_latency_seconds_count{endpoint="crm"} 1`,
		`plantstore_webhook_dead_letters{endpoint="crm"} 0`,
		`plantstore_webhook_oldest_pending_age_seconds{endpoint="crm"} 0`,
		`plantstore_webhook_endpoint_gone{endpoint="crm"} 0`,
		`plantstore_webhook_endpoint_circuit_open{endpoint="crm"} 0`,
	} {
		if !strings.Contains(text, series) {
			t.Errorf("the scrape lacks %s", series)
		}
	}
}

// grepLines returns the lines of text that contain substr.
func grepLines(text, substr string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
