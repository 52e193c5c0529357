package client

import (
	"errors"
	"testing"
)

// TestModuleCommand: the ERET and ESTO lines of module transfers, as
// GCT's globus-url-copy sends them (quotes even around no parameters),
// and the names and parameters that cannot be sent.
func TestModuleCommand(t *testing.T) {
	for _, tc := range []struct{ verb, name, params, want string }{
		{"ERET", "gzip", "", `ERET gzip="" /a b`},
		{"ESTO", "tar,zstd", "|19", `ESTO tar,zstd="|19" /a b`},
	} {
		got, err := moduleCommand(tc.verb, tc.name, tc.params, "/a b")
		if err != nil || got != tc.want {
			t.Errorf("moduleCommand(%q, %q, %q) = %q, %v; want %q", tc.verb, tc.name, tc.params, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, params string }{
		{"", "9"}, {"gz ip", ""}, {`gz"ip`, ""}, {"gzip=9", ""}, {"gzip", `a"b`}, {"gzip", "a\r\nDELE /x"},
	} {
		if _, err := moduleCommand("ERET", tc.name, tc.params, "/f"); !errors.Is(err, ErrModule) {
			t.Errorf("moduleCommand(%q, %q): %v, want ErrModule", tc.name, tc.params, err)
		}
	}
}

// TestModuleOptionConflicts: module transfers refuse the options that
// cut the data into windows or resume it.
func TestModuleOptionConflicts(t *testing.T) {
	var rs RangeSet
	rs.Add(Range{Start: 0, End: 10})
	bad := []error{
		checkRetrieveModule(&RetrieveOptions{Module: "gzip", Length: 5}),
		checkRetrieveModule(&RetrieveOptions{ModuleParams: "9"}),
		checkStoreModule(&StoreOptions{Module: "gzip", Append: true}),
		checkStoreModule(&StoreOptions{Module: "gzip", Offset: 3}),
		checkStoreModule(&StoreOptions{Module: "gzip", Restart: rs}),
		checkStoreModule(&StoreOptions{Module: "gzip", Part: Range{Start: 0, End: 4}}),
		checkStoreModule(&StoreOptions{Module: "gzip", Striped: true}),
		checkThirdPartyModules(&ThirdPartyOptions{SrcModule: "gzip", Length: 4}),
		checkThirdPartyModules(&ThirdPartyOptions{DstModule: "gzip", Restart: rs}),
		checkThirdPartyModules(&ThirdPartyOptions{DstModuleParams: "x"}),
	}
	for i, err := range bad {
		if !errors.Is(err, ErrModule) {
			t.Errorf("case %d: %v, want ErrModule", i, err)
		}
	}
	good := []error{
		checkRetrieveModule(&RetrieveOptions{Module: "gzip", Offset: 5, Restart: rs, Parallel: 4}),
		checkStoreModule(&StoreOptions{Module: "gzip", ModuleParams: "9", Size: 100, Parallel: 4}),
		checkThirdPartyModules(&ThirdPartyOptions{SrcModule: "tar", DstModule: "tar", Parallel: 2}),
		checkStoreModule(&StoreOptions{Offset: 3}),
	}
	for i, err := range good {
		if err != nil {
			t.Errorf("good case %d: %v", i, err)
		}
	}
}
