package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Errors a call can be tested for with errors.Is. The *Error a call returns
// matches the one for its status; errors.As gives the status and the
// server's message.
var (
	ErrBadRequest         = errors.New("bad request")
	ErrUnauthorized       = errors.New("unauthorized")
	ErrForbidden          = errors.New("forbidden")
	ErrNotFound           = errors.New("not found")
	ErrConflict           = errors.New("conflict")
	ErrPreconditionFailed = errors.New("precondition failed")
	ErrUnavailable        = errors.New("unavailable") // 503 and 429, after the retries
	// ErrCursorGone is a change feed cursor older than the server's
	// retention window, or not of the store's history (another store's,
	// or given after the backup the store was restored from): 410. List
	// the plants again and follow from the listing's Page.ChangesCursor.
	ErrCursorGone = errors.New("change feed cursor gone")
)

// Error is an answer of the API that is not a success.
type Error struct {
	Status  int    // the HTTP status
	Message string // the server's message, for a human
}

func (e *Error) Error() string {
	return fmt.Sprintf("plantstore: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is matches the sentinel of the error's status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == ErrBadRequest
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusPreconditionFailed:
		return target == ErrPreconditionFailed
	case http.StatusGone:
		return target == ErrCursorGone
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return target == ErrUnavailable
	}
	return false
}

// apiError reads the Error body of a failed answer; a body that is not one
// (a proxy's page, say) keeps the status with the body's start as message.
func apiError(status int, body []byte) *Error {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = string(body[:min(len(body), 200)])
	}
	return &Error{Status: status, Message: e.Message}
}
