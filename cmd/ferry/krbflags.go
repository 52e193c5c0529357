package main

// Kerberos options of the client subcommands: -krb authenticates ftp://
// locations with Kerberos 5 (AUTH GSSAPI, service ftp/HOST@REALM), with
// the credential cache kinit left ($KRB5CCNAME) or a keytab.

import (
	"flag"
	"sync"

	krbclient "github.com/jcmturner/gokrb5/v8/client"

	"github.com/ferrygrid/ferry/client"
)

// krbFlags are the Kerberos options; part of gsiFlags, the shared
// security options.
type krbFlags struct {
	on, enc           bool
	keytab, principal string

	once sync.Once
	cl   *krbclient.Client
	err  error
}

func (k *krbFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&k.on, "krb", false, "ftp: authenticate with Kerberos 5 (AUTH GSSAPI to ftp/HOST@REALM) using the credential cache of kinit ($KRB5CCNAME, $KRB5_CONFIG); commands integrity-protected (MIC), data in clear")
	fs.BoolVar(&k.enc, "krb-enc", false, "ftp -krb: encrypt commands and replies (ENC) instead of integrity-protecting them")
	fs.StringVar(&k.keytab, "krb-keytab", "", "ftp -krb: log in with the key of -krb-principal from keytab `FILE` instead of the credential cache")
	fs.StringVar(&k.principal, "krb-principal", "", "ftp -krb: the client `PRINCIPAL` (name or name@REALM) for -krb-keytab")
}

func (k *krbFlags) check() error {
	if (k.enc || k.keytab != "" || k.principal != "") && !k.on {
		return usagef("-krb-enc, -krb-keytab and -krb-principal need -krb")
	}
	if (k.keytab == "") != (k.principal == "") {
		return usagef("-krb-keytab and -krb-principal go together")
	}
	return nil
}

// config returns the KerberosConfig for one connection; the credentials
// are loaded once.
func (k *krbFlags) config() (*client.KerberosConfig, error) {
	k.once.Do(func() {
		if k.keytab != "" {
			k.cl, k.err = client.KerberosFromKeytab(k.keytab, k.principal)
		} else {
			k.cl, k.err = client.KerberosFromCCache()
		}
	})
	if k.err != nil {
		return nil, k.err
	}
	return &client.KerberosConfig{Client: k.cl, Confidential: k.enc}, nil
}
