//go:build !unix

package translog

import (
	"fmt"
	"os"
)

func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("translog: %w", err)
	}
	return f, nil
}
