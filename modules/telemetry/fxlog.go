package telemetry

import (
	"sync"
	"time"

	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
)

// FxLogger sends Fx's own events through zap; pass it to fx.WithLogger.
//
// Fx reports every constructor, invoke and hook with its stack trace,
// some 160 lines at each start, which buried the program's own debug
// lines. So its events are summarised, at debug: one line once the app
// has started ("started": how many constructors ran, invokes, start hooks
// and their time) and one once it has stopped. A failing event is a debug
// line of its own, naming the function and the error (without the stack
// trace): the program reports a failed start or stop itself, as one line
// on stderr, so Fx's account of it is detail for whoever asked for debug.
func FxLogger(log *zap.Logger) fxevent.Logger {
	return &fxSummary{log: log.Named("fx")}
}

// fxSummary counts Fx's events between a start and a stop.
type fxSummary struct {
	log *zap.Logger

	mu                                  sync.Mutex
	provided, decorated, supplied, ran  int
	invoked, startHooks, stopHooks      int
	startHooksRuntime, stopHooksRuntime time.Duration
}

// LogEvent implements fxevent.Logger.
func (l *fxSummary) LogEvent(event fxevent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := event.(type) {
	case *fxevent.Provided:
		l.provided++
		l.failed("provide", e.ConstructorName, e.Err)
	case *fxevent.Decorated:
		l.decorated++
		l.failed("decorate", e.DecoratorName, e.Err)
	case *fxevent.Supplied:
		l.supplied++
		l.failed("supply", e.TypeName, e.Err)
	case *fxevent.Replaced:
		l.failed("replace", "", e.Err)
	case *fxevent.Run:
		l.ran++
		l.failed("run", e.Name, e.Err)
	case *fxevent.Invoked:
		l.invoked++
		l.failed("invoke", e.FunctionName, e.Err)
	case *fxevent.OnStartExecuted:
		l.startHooks++
		l.startHooksRuntime += e.Runtime
		l.failed("OnStart hook", e.FunctionName, e.Err)
	case *fxevent.OnStopExecuted:
		l.stopHooks++
		l.stopHooksRuntime += e.Runtime
		l.failed("OnStop hook", e.FunctionName, e.Err)
	case *fxevent.LoggerInitialized:
		l.failed("custom logger", e.ConstructorName, e.Err)
	case *fxevent.RollingBack:
		l.failed("start, rolling back", "", e.StartErr)
	case *fxevent.RolledBack:
		l.failed("rollback", "", e.Err)
	case *fxevent.Started:
		if e.Err == nil {
			l.log.Debug("started",
				zap.Int("provided", l.provided), zap.Int("supplied", l.supplied), zap.Int("decorated", l.decorated),
				zap.Int("constructors_run", l.ran), zap.Int("invoked", l.invoked),
				zap.Int("start_hooks", l.startHooks), zap.Duration("start_hooks_runtime", l.startHooksRuntime))
		}
		l.failed("start", "", e.Err)
	case *fxevent.Stopped:
		if e.Err == nil {
			l.log.Debug("stopped", zap.Int("stop_hooks", l.stopHooks), zap.Duration("stop_hooks_runtime", l.stopHooksRuntime))
		}
		l.failed("stop", "", e.Err)
	}
}

// failed logs a failing event: what failed (the function, when the event
// names one) and the error; nothing when err is nil.
func (l *fxSummary) failed(what, function string, err error) {
	if err == nil {
		return
	}
	fields := []zap.Field{zap.String("event", what), zap.Error(err)}
	if function != "" {
		fields = append(fields, zap.String("function", function))
	}
	l.log.Debug("failed", fields...)
}
