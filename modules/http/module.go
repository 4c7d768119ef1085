package httpserver

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
)

// Module provides the two listeners and starts and stops them with the app.
var Module = fx.Module("http",
	fx.Provide(
		fx.Annotate(NewRouter, fx.ParamTags(`group:"api_routes"`)),
		fx.Annotate(NewReadiness, fx.ParamTags(`group:"readiness"`)),
		NewRecoverer,
		newShedder,
		fx.Annotate(NewAPIHandler, fx.ResultTags(`name:"api"`)),
		AsAdminRoutes(PprofRoutes),
		fx.Annotate(NewAdminHandler, fx.ParamTags(``, `group:"admin_routes"`), fx.ResultTags(`name:"admin"`)),
		fx.Annotate(NewServers, fx.ParamTags(``, `name:"api"`, `name:"admin"`)),
	),
	fx.Invoke(register, registerConnectionMetrics),
)

func newShedder(cfg Config, reg prometheus.Registerer) (*Shedder, error) {
	return NewShedder(cfg.Limits.withDefaults().MaxConcurrentRequests, reg)
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
