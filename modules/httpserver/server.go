package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Servers runs the API and admin listeners.
type Servers struct {
	cfg   Config
	api   *http.Server
	admin *http.Server
	ready *Readiness
	log   *zap.Logger
	conns *connectionCap // the API listener's, see conncap.go

	apiAddr, adminAddr net.Addr
	failed             chan error
}

// NewServers returns servers for the two handlers; Start opens them.
func NewServers(cfg Config, apiHandler, adminHandler http.Handler, ready *Readiness, log *zap.Logger) *Servers {
	errLog := zap.NewStdLog(log.Named("http"))
	s := &Servers{
		cfg:    cfg,
		api:    newServer(closeWhileDraining(ready, apiHandler), cfg.Limits, errLog),
		admin:  newServer(adminHandler, cfg.Limits, errLog),
		ready:  ready,
		log:    log,
		conns:  newConnectionCap(withDefaults(cfg.Limits).MaxConnections),
		failed: make(chan error, 2), // one per listener: serve never blocks on it
	}
	s.api.ConnState = s.conns.track
	s.api.RegisterOnShutdown(ready.stop)
	return s
}

// newServer returns a server with the limits set (see limits.go): without
// them net/http waits forever for slow clients. Its requests are numbered
// per connection, for the framing check (framing.go).
func newServer(h http.Handler, l Limits, errLog *log.Logger) *http.Server {
	l = withDefaults(l)
	return &http.Server{
		Handler:           countRequests(h),
		ConnContext:       framingContext,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}

// Start listens on both addresses, failing at once if either is taken, and
// serves in the background.
func (s *Servers) Start(ctx context.Context) error {
	var lc net.ListenConfig
	apiLn, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return listenError("api", s.cfg.Addr, err)
	}
	adminLn, err := lc.Listen(ctx, "tcp", s.cfg.AdminAddr)
	if err != nil {
		_ = apiLn.Close()
		return listenError("admin", s.cfg.AdminAddr, err)
	}
	s.apiAddr, s.adminAddr = apiLn.Addr(), adminLn.Addr()
	// framingListener outermost: the server's ConnContext looks for its
	// connections.
	go s.serve("api", s.api, framingListener{s.conns.limit(apiLn)})
	go s.serve("admin", s.admin, framingListener{adminLn})
	return nil
}

func (s *Servers) serve(name string, srv *http.Server, ln net.Listener) {
	s.log.Info("listening", zap.String("listener", name), zap.String("addr", ln.Addr().String()))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("listener failed", zap.String("listener", name), zap.Error(err))
		s.failed <- fmt.Errorf("%s listener: %w", name, err)
	}
}

// Failed receives an error when a listener stops serving on its own. The
// process should then stop: otherwise it would live on with readiness and
// liveness answering 200 and no API behind them.
func (s *Servers) Failed() <-chan error { return s.failed }

// Stop drains: readiness turns 503 at once, the API keeps serving for the
// drain delay (load balancers notice and stop sending), then in-flight
// requests get the shutdown timeout to finish.
func (s *Servers) Stop(ctx context.Context) error {
	s.ready.Drain() // from now on closeWhileDraining closes each connection after its answer
	s.log.Info("draining", zap.Duration("drain_delay", s.cfg.DrainDelay))
	select {
	case <-time.After(s.cfg.DrainDelay):
	case <-ctx.Done():
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.api.Shutdown(ctx)
	return errors.Join(err, s.admin.Shutdown(ctx))
}

// closeWhileDraining closes each connection after its answer once the drain
// began, which moves keep-alive clients to other replicas. It does not use
// http.Server.SetKeepAlivesEnabled(false): that also closes idle connections
// at once, under clients that are sending a request on them at that moment,
// and such a POST fails without being safe to retry.
func closeWhileDraining(ready *Readiness, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ready.Draining() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// APIAddr is the API listener's address once started (useful with port 0).
func (s *Servers) APIAddr() net.Addr { return s.apiAddr }

// AdminAddr is the admin listener's address once started.
func (s *Servers) AdminAddr() net.Addr { return s.adminAddr }
