// Package console serves the browser console on the API listener: a page
// of plain HTML, CSS and JavaScript embedded in the binary, which asks the
// API itself for everything it shows, with the bearer token the user types
// in, and the service's own figures (figures.go), sampled from the
// process's Prometheus registry.
//
// The page's files are public: they hold no data, and the page must load
// before the user has given a token. Every data call is an API request
// behind the same tokens and scopes as any client's. The page keeps the
// token in the tab's sessionStorage and sends it only in the
// Authorization header of its fetch calls: never in a URL, a cookie, or
// the page.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// Paths of the console on the API listener.
const (
	Path        = "/console"
	AssetsPath  = "/console/assets/{file}"
	FiguresPath = "/console/api/figures"
)

//go:embed assets
var assets embed.FS

// Headers are on every console answer, the chain's refusals of the
// figures route included: no script but the console's own files, no
// connection but to this origin, no framing, no referrer leaving the page.
var Headers = http.Header{
	"Content-Security-Policy": {"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
	"Referrer-Policy":              {"no-referrer"},
	"X-Frame-Options":              {"DENY"},
	"Cross-Origin-Opener-Policy":   {"same-origin"},
	"Cross-Origin-Resource-Policy": {"same-origin"},
}

// Console serves the page's files and the figures.
type Console struct {
	sampler *Sampler
}

// New returns the console over the figures of g; the sampler must run
// (Sampler.Run) for the figures to fill.
func New(g prometheus.Gatherer) *Console {
	return &Console{sampler: NewSampler(g)}
}

// Routes are the console's routes on the API listener: the page and its
// files, public; the figures, for a caller with plants:read.
func (c *Console) Routes() []httpapi.Route {
	page := http.HandlerFunc(c.page)
	return []httpapi.Route{
		{Method: http.MethodGet, Path: Path, Handler: page, Public: true, Headers: Headers},
		{Method: http.MethodGet, Path: Path + "/", Handler: page, Public: true, Headers: Headers},
		{Method: http.MethodGet, Path: AssetsPath, Handler: http.HandlerFunc(c.asset), Public: true, Headers: Headers},
		{Method: http.MethodGet, Path: FiguresPath, Handler: http.HandlerFunc(c.figures), Requires: principal.ScopePlantsRead, Headers: Headers},
	}
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	http.ServeFileFS(w, r, assets, "assets/index.html")
}

// assetFiles are the page's files by name, the page itself left out (it
// is served at Path): a request names one of them or gets a 404, so no
// path reaches anything else.
var assetFiles = func() map[string]string {
	entries, err := fs.ReadDir(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory: always there
	}
	files := make(map[string]string, len(entries))
	for _, e := range entries {
		if name := e.Name(); name != "index.html" {
			files[name] = "assets/" + name
		}
	}
	return files
}()

// asset serves one of the page's files.
func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["file"]
	file, ok := assetFiles[name]
	if !ok {
		httperr.Write(w, http.StatusNotFound, "no such console file: "+name)
		return
	}
	http.ServeFileFS(w, r, assets, file)
}

func (c *Console) figures(w http.ResponseWriter, _ *http.Request) {
	body, err := json.Marshal(c.sampler.Figures())
	if err != nil { // plain data: never
		httperr.Write(w, http.StatusInternalServerError, "internal error")
		return
	}
	httperr.SetJSONContentType(w.Header())
	_, _ = w.Write(body)
}

// Module serves the console on the API listener and samples the figures
// while the app runs.
var Module = fx.Module("console",
	fx.Provide(
		func(reg *prometheus.Registry) *Console { return New(reg) },
		httpapi.AsAPIRoutes((*Console).Routes),
	),
	// The sampler runs from start to stop: its ring must hold the minutes
	// before someone opens the page.
	fx.Invoke(func(lc fx.Lifecycle, c *Console) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				go func() { defer close(done); c.sampler.Run(ctx) }()
				return nil
			},
			OnStop: func(context.Context) error {
				cancel()
				<-done
				return nil
			},
		})
	}),
)
