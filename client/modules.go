package client

// Server-side processing modules (GFD.020 §3.6, docs/modules.md): a
// download or upload names a module chain, which the server runs over
// the data:
//
//	ERET NAME="PARAMS" PATH   the chain's output for PATH
//	ESTO NAME="PARAMS" PATH   the data, undone by the chain, stored at PATH
//
// This is the form GCT's globus-url-copy sends for -smn/-smp and
// -dmn/-dmp (the quotes are always there, empty without parameters).
// What the chain makes has no size known in advance and cannot be cut
// into windows, so module transfers take no Length, Append, Offset on
// upload, Restart on upload or Part.

import (
	"errors"
	"fmt"
	"strings"
)

// ErrModule reports module options that cannot be used together with
// the others, or a module name or parameters that cannot be sent.
var ErrModule = errors.New("client: bad processing module request")

// moduleCommand is verb (ERET or ESTO) with the module chain name and
// its parameters for path.
func moduleCommand(verb, name, params, path string) (string, error) {
	if err := checkModule(name, params); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s=\"%s\" %s", verb, name, params, path), nil
}

// checkModule vets a module chain name and its parameters: a name has
// no space, quote or equals sign, and the parameters no double quote
// (the server reads up to the first one).
func checkModule(name, params string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: module parameters %q without a module name", ErrModule, params)
	case strings.ContainsAny(name, " \t\"=\r\n"):
		return fmt.Errorf("%w: module name %q has a space, quote or '='", ErrModule, name)
	case strings.ContainsAny(params, "\"\r\n"):
		return fmt.Errorf("%w: module parameters %q have a double quote or line break", ErrModule, params)
	}
	return nil
}

// checkRetrieveModule vets RetrieveOptions that name a module.
func checkRetrieveModule(o *RetrieveOptions) error {
	if o.Module == "" && o.ModuleParams == "" {
		return nil
	}
	if o.Length > 0 {
		return fmt.Errorf("%w: ERET with module %s takes no length", ErrModule, o.Module)
	}
	return checkModule(o.Module, o.ModuleParams)
}

// checkStoreModule vets StoreOptions that name a module.
func checkStoreModule(o *StoreOptions) error {
	if o.Module == "" && o.ModuleParams == "" {
		return nil
	}
	switch {
	case o.Append, o.Offset > 0, o.Restart.Len() > 0, o.Part.End > o.Part.Start, o.Striped:
		return fmt.Errorf("%w: ESTO with module %s takes no append, offset, restart, part or striping", ErrModule, o.Module)
	}
	return checkModule(o.Module, o.ModuleParams)
}

// checkThirdPartyModules vets ThirdPartyOptions that name modules.
func checkThirdPartyModules(o *ThirdPartyOptions) error {
	src := o.SrcModule != "" || o.SrcModuleParams != ""
	dst := o.DstModule != "" || o.DstModuleParams != ""
	if !src && !dst {
		return nil
	}
	if o.Offset > 0 || o.Length > 0 || o.PartOf > 0 || o.Restart.Len() > 0 {
		return fmt.Errorf("%w: a third-party copy with modules takes no offset, length, part or restart", ErrModule)
	}
	if src {
		if err := checkModule(o.SrcModule, o.SrcModuleParams); err != nil {
			return err
		}
	}
	if dst {
		return checkModule(o.DstModule, o.DstModuleParams)
	}
	return nil
}
