package httpserver

import (
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
	fx.Invoke(register),
)

func newShedder(cfg Config, reg prometheus.Registerer) (*Shedder, error) {
	return NewShedder(cfg.Limits.withDefaults().MaxConcurrentRequests, reg)
}

func register(lc fx.Lifecycle, s *Servers) {
	lc.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
}
