package client

// The generated layer comes from the project's own OpenAPI document with
// the oapi-codegen pinned in go.mod (a tool dependency); TestGeneratedIsFresh
// fails when the committed file differs from what this produces.
//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../api/openapi.yaml
