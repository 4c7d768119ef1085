package httpserver

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Module provides the two listeners and starts and stops them with the app.
// What the other modules need of it is in httpapi; of its own values, only
// the servers, the readiness, the API handler (named "api", which the
// program's tests serve without a listener), the listeners' limits and the
// shutdown's signal (httpapi.Stopping) are visible outside it.
var Module = fx.Module("http",
	fx.Provide(
		fx.Annotate(NewRouter, fx.ParamTags(`group:"api_routes"`)),
		NewRecoverer,
		newShedder,
		fx.Annotate(NewAdminHandler, fx.ParamTags(``, `group:"admin_routes"`), fx.ResultTags(`name:"admin"`)),
		fx.Private,
	),
	fx.Provide(
		fx.Annotate(NewReadiness, fx.ParamTags(`group:"readiness"`)),
		fx.Annotate(NewAPIHandler, fx.ResultTags(`name:"api"`)),
		fx.Annotate(NewServers, fx.ParamTags(``, `name:"api"`, `name:"admin"`)),
		httpapi.AsAdminRoutes(PprofRoutes),
		limits,
		stopping,
	),
	fx.Invoke(register, registerConnectionMetrics),
)

// limits are the listeners' limits as configured (zero for a default), for
// a route that paces itself within the read and write timeouts.
func limits(cfg Config) httpapi.Limits { return cfg.Limits }

// stopping is the readiness's Stopping, for the routes whose answers last.
func stopping(rd *Readiness) httpapi.Stopping { return rd.Stopping() }

func newShedder(cfg Config, reg prometheus.Registerer) (*Shedder, error) {
	return NewShedderFor(cfg.Limits, reg)
}

func register(lc fx.Lifecycle, s *Servers, sd fx.Shutdowner) {
	stopping := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := s.Start(ctx); err != nil {
				return err
			}
			go stopOnFailure(s.Failed(), sd, stopping)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			close(stopping)
			return s.Stop(ctx)
		},
	})
}

// stopOnFailure shuts the app down with exit code 1 when a listener fails
// before the app stops, so that an orchestrator restarts the process.
func stopOnFailure(failed <-chan error, sd fx.Shutdowner, stopping <-chan struct{}) {
	select {
	case <-failed: //nolint:errcheck // serve logged the error; here only its arrival matters
		_ = sd.Shutdown(fx.ExitCode(1))
	case <-stopping:
	}
}
