// Package accumulator buffers rows per table and bucket into Fluss batches,
// bounded by a memory budget. Append returns a handle at once; callers wait on
// it or drop it and Flush later.
package accumulator
