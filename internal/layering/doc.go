// Package layering holds no code: its test checks, with `go list`, that
// the product's packages import only the layers below them (the table in
// layering_test.go), that nothing the gateway binary links is a dev or test
// package, and that README's import graph is the one the code has
// (`make readme-graph` rewrites it).
package layering
