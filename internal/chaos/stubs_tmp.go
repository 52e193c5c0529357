package chaos

import "context"

func (h *harness) slowloris(ctx context.Context) (Result, error) { return Result{}, nil }
func (h *harness) disk(ctx context.Context) (Result, error)      { return Result{}, nil }
