// Package s3 is a DSI back-end that keeps files as objects in one bucket
// of an S3-compatible object store (AWS S3, SeaweedFS, MinIO, Ceph RGW),
// through minio-go.
//
// Names map onto keys below an optional prefix: "/a/b.dat" is the object
// "PREFIX/a/b.dat". S3 has no directories, so they follow the usual
// convention: a directory exists when an empty marker object "PREFIX/a/"
// exists, or when any key starts with "PREFIX/a/". Mkdir writes the
// marker; Remove and Rmdir write the parent's marker first when it has
// none, so that a directory does not vanish with its last file.
//
// Reads are ranged GETs: a Reader fetches the file in chunks (ReadChunk
// bytes, a few cached and the next one prefetched), so that the blocks
// of a MODE E download, asked for by many streams out of order, cost one
// GET per chunk rather than one per block; a long range (stream mode,
// ERET) is one GET streamed straight to the data connection
// ([dsi.RangeWriterTo]).
//
// Writes arrive at offsets (MODE E delivers blocks out of order over
// many streams). A Writer maps them onto one multipart upload: part i
// holds bytes [i*PartSize, (i+1)*PartSize). A part is buffered (in memory
// pages of 256 KiB within the Writer's and the storage's budgets, or in a
// temporary file past them) until every byte of it has arrived, then
// uploaded at once from the WriteAt that completed it. Close fills what
// is still missing from the old object (when the file was opened without
// Truncate), uploads the rest and completes the upload: only then does
// the object appear, whole. A file with holes (bytes below its end that
// neither a write nor the old object provides) is not stored: Close
// aborts and fails (Config.MaxZeroFill). Writes past the declared size
// or the largest object fail at once.
// Several hosts can write one file together, into one multipart upload
// that one of them starts and completes (Writer.Share, FS.Join: the
// movers of a striped server, see shared.go).
// A Writer whose Create context is cancelled before Close, or which saw
// an error, aborts its upload instead, and so does [Writer.Abort]: no
// half object is ever visible under the name.
//
// Rename is a server-side copy and a delete (per object, for a
// directory: not atomic). A file's permission bits are kept as user
// metadata (x-amz-meta-ferry-mode, from CreateOptions.Perm) and shown by
// Stat, as is x-amz-meta-ferry-mtime when another tool set it; a listing
// shows what the store lists (size, LastModified, the default mode).
// There is no Chmod or Chtimes: S3 cannot change an object's metadata
// without copying it, and some stores keep none on directories.
package s3

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ferrygrid/ferry/dsi"
)

// Default sizes.
const (
	// DefaultPartSize is the part size of multipart uploads.
	DefaultPartSize = 8 << 20
	// MinPartSize is S3's smallest part (all but the last).
	MinPartSize = 5 << 20
	// DefaultReadChunk is the size of one ranged GET of a Reader.
	DefaultReadChunk = 8 << 20
	// DefaultMaxMemParts is how many parts' worth of memory a Writer
	// takes before it buffers further bytes in a temporary file.
	DefaultMaxMemParts = 32
	// DefaultMaxMemory bounds the memory all the Writers of a storage
	// take together.
	DefaultMaxMemory = 1 << 30
	// DefaultMaxSpill bounds the disk all the Writers of a storage use
	// for the parts they buffer in their temporary files.
	DefaultMaxSpill = 64 << 30
	// MaxObjectSize is the largest object S3 stores (5 TiB).
	MaxObjectSize = 5 << 40
	// maxParts is the most parts of one multipart upload.
	maxParts int64 = 10000
)

// Metadata keys (x-amz-meta-…).
const (
	metaMode  = "Ferry-Mode"  // octal permission bits
	metaMtime = "Ferry-Mtime" // RFC 3339 with nanoseconds
	metaID    = "Ferry-Id"    // a unique id given at creation, kept by Rename
)

// Config says which bucket to serve and how to reach it. The zero value
// of each optional field has the meaning its comment gives.
type Config struct {
	// Endpoint is the store's URL ("http://127.0.0.1:8333",
	// "https://s3.eu-west-1.amazonaws.com") or host:port (then HTTPS).
	// Required.
	Endpoint string
	// Bucket is the bucket served. Required; it must exist.
	Bucket string
	// Prefix is a key prefix under which the storage's root lies ("" for
	// the whole bucket); slashes at either end are ignored.
	Prefix string
	// Region is the bucket's region; "" lets the client find it.
	Region string
	// AccessKey, SecretKey and SessionToken are static credentials;
	// with AccessKey empty the standard AWS variables are used
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
	AccessKey, SecretKey, SessionToken string
	// PathStyle forces path-style requests (http://host/bucket/key),
	// which most stores other than AWS need. Off: the client decides
	// (path style for IP addresses and non-AWS hosts).
	PathStyle bool
	// PartSize is the multipart part size; 0 means DefaultPartSize, and
	// values below MinPartSize are raised to it.
	PartSize int64
	// ReadChunk is the size of a Reader's ranged GETs; 0 means
	// DefaultReadChunk.
	ReadChunk int64
	// MaxMemParts bounds the memory one Writer takes for the parts it
	// is filling, in parts (MaxMemParts*PartSize bytes); further bytes
	// go to a temporary file in TempDir. Memory is taken in pages of
	// 256 KiB as writes touch them. 0 means DefaultMaxMemParts.
	MaxMemParts int
	// MaxMemory bounds the memory all Writers of the storage take
	// together, in bytes; past it they buffer in their temporary files.
	// 0 means DefaultMaxMemory.
	MaxMemory int64
	// MaxObjectSize is the largest file a Writer accepts: a write ending
	// past it fails (dsi.ErrNoSpace). It is further bounded by what one
	// multipart upload can hold (10000 parts of PartSize). 0 means
	// MaxObjectSize, S3's 5 TiB.
	MaxObjectSize int64
	// MaxZeroFill is how many bytes of holes (ranges below a file's end
	// that no write covered and no old content fills) Close fills with
	// zeros. A file with more is not stored: Close aborts its upload and
	// fails (dsi.ErrInvalid). 0, the default, stores no file with holes:
	// zeros the client never sent would cost uploads and storage, and
	// an object cannot be patched afterwards.
	MaxZeroFill int64
	// MaxSpill bounds the bytes all Writers of the storage hold in their
	// temporary files together; a write past it fails (dsi.ErrNoSpace).
	// A Writer of declared size (a truncating Create's Size) holds at
	// most that much. 0 means DefaultMaxSpill.
	MaxSpill int64
	// TempDir is where Writers spill parts; "" means os.TempDir().
	TempDir string
	// Transport is the HTTP transport; nil means minio-go's default.
	Transport http.RoundTripper
}

// ConfigFromEnv fills the empty fields of c from the standard AWS
// variables: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION or
// AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN.
func ConfigFromEnv(c Config) Config {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := os.Getenv(k); v != "" {
				return v
			}
		}
		return ""
	}
	if c.Endpoint == "" {
		c.Endpoint = first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if c.Region == "" {
		c.Region = first("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if c.AccessKey == "" {
		c.AccessKey = os.Getenv("AWS_ACCESS_KEY_ID")
		c.SecretKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
		c.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
	}
	return c
}

// FS is a bucket (or a prefix of one) served as a DSI storage. It is safe
// for concurrent use.
type FS struct {
	c      *minio.Client
	core   minio.Core
	bucket string
	prefix string // "" or ends in "/"
	cfg    Config
	mem    atomic.Int64 // bytes of memory the Writers hold (Config.MaxMemory)
	spill  atomic.Int64 // bytes the Writers hold in spill files (Config.MaxSpill)
}

func (f *FS) maxSpill() int64 { return cmp.Or(f.cfg.MaxSpill, DefaultMaxSpill) }

// takeSpill reserves n bytes of the Writers' spill space, or reports false.
func (f *FS) takeSpill(n int64) bool {
	limit := f.maxSpill()
	for {
		cur := f.spill.Load()
		if cur+n > limit {
			return false
		}
		if f.spill.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// giveSpill returns n bytes taken with takeSpill.
func (f *FS) giveSpill(n int64) { f.spill.Add(-n) }

// takeMem reserves n bytes of the Writers' memory, or reports false.
func (f *FS) takeMem(n int64) bool {
	limit := cmp.Or(f.cfg.MaxMemory, DefaultMaxMemory)
	for {
		cur := f.mem.Load()
		if cur+n > limit {
			return false
		}
		if f.mem.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// giveMem returns n bytes taken with takeMem.
func (f *FS) giveMem(n int64) { f.mem.Add(-n) }

// maxObject is the largest file a Writer accepts.
func (f *FS) maxObject() int64 {
	limit := int64(MaxObjectSize)
	if f.cfg.MaxObjectSize > 0 {
		limit = min(limit, f.cfg.MaxObjectSize)
	}
	if f.cfg.PartSize > 0 && f.cfg.PartSize <= limit/maxParts {
		limit = min(limit, maxParts*f.cfg.PartSize)
	}
	return limit
}

// New connects to the store that cfg names and checks that the bucket
// exists. It fills empty fields from the AWS variables (ConfigFromEnv).
func New(ctx context.Context, cfg Config) (*FS, error) {
	cfg = ConfigFromEnv(cfg)
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("s3: an endpoint and a bucket are required: %w", dsi.ErrInvalid)
	}
	host, secure := cfg.Endpoint, true
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil {
			return nil, fmt.Errorf("s3: endpoint %q: %w", cfg.Endpoint, err)
		}
		switch u.Scheme {
		case "http":
			secure = false
		case "https":
		default:
			return nil, fmt.Errorf("s3: endpoint %q: scheme must be http or https: %w", cfg.Endpoint, dsi.ErrInvalid)
		}
		host = u.Host
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	cfg.PartSize = max(cfg.PartSize, MinPartSize)
	if cfg.ReadChunk <= 0 {
		cfg.ReadChunk = DefaultReadChunk
	}
	if cfg.MaxMemParts <= 0 {
		cfg.MaxMemParts = DefaultMaxMemParts
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.NewEnvAWS()
	}
	opts := &minio.Options{Creds: creds, Secure: secure, Region: cfg.Region, Transport: cfg.Transport}
	if cfg.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	}
	c, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, mapErr(err))
	}
	if !ok {
		return nil, fmt.Errorf("s3: bucket %s: %w", cfg.Bucket, dsi.ErrNotExist)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &FS{c: c, core: minio.Core{Client: c}, bucket: cfg.Bucket, prefix: prefix, cfg: cfg}, nil
}

// Client is the minio-go client the storage uses.
func (f *FS) Client() *minio.Client { return f.c }

// Bucket is the bucket served.
func (f *FS) Bucket() string { return f.bucket }

// Key is the object key of the file name ("/a/b" → "PREFIX/a/b").
func (f *FS) Key(name string) string { return f.key(name) }

func (f *FS) key(name string) string {
	return f.prefix + strings.TrimPrefix(path.Clean("/"+name), "/")
}

// dirKey is the marker key of directory name, which is also the prefix
// of every key inside it.
func (f *FS) dirKey(name string) string {
	if isRoot(name) {
		return f.prefix
	}
	return f.key(name) + "/"
}

func isRoot(name string) bool { return path.Clean("/"+name) == "/" }

// mapErr turns an S3 error into the DSI's sentinels.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	r := minio.ToErrorResponse(err)
	var sentinel error
	switch {
	case r.Code == "NoSuchKey" || r.Code == "NoSuchBucket" || r.Code == "NotFound" || r.StatusCode == http.StatusNotFound:
		sentinel = dsi.ErrNotExist
	case r.Code == "AccessDenied" || r.StatusCode == http.StatusForbidden:
		sentinel = dsi.ErrPermission
	case r.Code == "EntityTooLarge" || r.Code == "QuotaExceeded":
		sentinel = dsi.ErrNoSpace
	case r.Code == "NotImplemented" || r.StatusCode == http.StatusNotImplemented:
		sentinel = dsi.ErrNotSupported
	default:
		return err
	}
	return fmt.Errorf("%w (%v)", sentinel, err)
}

func opErr(op, name string, err error) error {
	return fmt.Errorf("s3: %s %s: %w", op, name, err)
}

// head describes the object of a file, or fails with ErrNotExist.
func (f *FS) head(ctx context.Context, name string) (minio.ObjectInfo, error) {
	if isRoot(name) {
		return minio.ObjectInfo{}, dsi.ErrNotExist
	}
	oi, err := f.c.StatObject(ctx, f.bucket, f.key(name), minio.StatObjectOptions{})
	return oi, mapErr(err)
}

// dirInfo reports whether directory name exists (a marker, or any key
// below it), with the time of what it found.
func (f *FS) dirInfo(ctx context.Context, name string) (bool, time.Time, error) {
	if isRoot(name) {
		return true, time.Time{}, nil
	}
	res, err := f.core.ListObjectsV2(f.bucket, f.dirKey(name), "", "", "", 1)
	if err != nil {
		return false, time.Time{}, mapErr(err)
	}
	if len(res.Contents) > 0 {
		return true, res.Contents[0].LastModified, nil
	}
	return len(res.CommonPrefixes) > 0, time.Time{}, nil
}

// fileInfo describes an object of a file.
func fileInfo(name string, oi minio.ObjectInfo) dsi.FileInfo {
	fi := dsi.FileInfo{
		Name:    path.Base(path.Clean("/" + name)),
		Size:    oi.Size,
		Mode:    0o644,
		ModTime: oi.LastModified,
		UID:     -1,
		GID:     -1,
	}
	applyMeta(&fi, oi.UserMetadata)
	return fi
}

func applyMeta(fi *dsi.FileInfo, m map[string]string) {
	get := func(k string) string {
		for mk, v := range m {
			if strings.EqualFold(mk, k) || strings.EqualFold(mk, "X-Amz-Meta-"+k) {
				return v
			}
		}
		return ""
	}
	if v := get(metaMode); v != "" {
		if p, err := strconv.ParseUint(v, 8, 32); err == nil {
			fi.Mode = fi.Mode.Type() | fs.FileMode(p)&fs.ModePerm
		}
	}
	if v := get(metaMtime); v != "" {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			fi.ModTime = t
		}
	}
	if v := get(metaID); v != "" {
		fi.Unique = v
	}
}

func dirFileInfo(name string, mod time.Time) dsi.FileInfo {
	n := path.Base(path.Clean("/" + name))
	return dsi.FileInfo{Name: n, Mode: fs.ModeDir | 0o755, ModTime: mod, UID: -1, GID: -1}
}

// Stat implements dsi.Storage.
func (f *FS) Stat(ctx context.Context, name string) (dsi.FileInfo, error) {
	if isRoot(name) {
		return dsi.FileInfo{Name: "/", Mode: fs.ModeDir | 0o755, UID: -1, GID: -1}, nil
	}
	oi, err := f.head(ctx, name)
	if err == nil {
		return fileInfo(name, oi), nil
	}
	if !errors.Is(err, dsi.ErrNotExist) {
		return dsi.FileInfo{}, opErr("stat", name, err)
	}
	return f.statDir(ctx, name)
}

// statDir describes directory name, whose file object does not exist.
func (f *FS) statDir(ctx context.Context, name string) (dsi.FileInfo, error) {
	marker, err := f.c.StatObject(ctx, f.bucket, f.dirKey(name), minio.StatObjectOptions{})
	if err == nil {
		fi := dirFileInfo(name, marker.LastModified)
		applyMeta(&fi, marker.UserMetadata)
		return fi, nil
	}
	if err = mapErr(err); !errors.Is(err, dsi.ErrNotExist) {
		return dsi.FileInfo{}, opErr("stat", name, err)
	}
	ok, mod, err := f.dirInfo(ctx, name)
	if err != nil {
		return dsi.FileInfo{}, opErr("stat", name, err)
	}
	if !ok {
		return dsi.FileInfo{}, opErr("stat", name, dsi.ErrNotExist)
	}
	return dirFileInfo(name, mod), nil
}

// checkParent fails unless the parent of name is an existing directory.
func (f *FS) checkParent(ctx context.Context, op, name string) error {
	dir := path.Dir(path.Clean("/" + name))
	if isRoot(dir) {
		return nil
	}
	fi, err := f.Stat(ctx, dir)
	if err != nil {
		if errors.Is(err, dsi.ErrNotExist) {
			return opErr(op, name, dsi.ErrNotExist)
		}
		return err
	}
	if !fi.IsDir() {
		return opErr(op, name, dsi.ErrNotDir)
	}
	return nil
}

// ReadDir implements dsi.Storage: one listing with "/" as delimiter,
// paged by the client (1000 keys a request).
func (f *FS) ReadDir(ctx context.Context, name string) ([]dsi.FileInfo, error) {
	if !isRoot(name) {
		if _, err := f.head(ctx, name); err == nil {
			return nil, opErr("readdir", name, dsi.ErrNotDir)
		} else if !errors.Is(err, dsi.ErrNotExist) {
			return nil, opErr("readdir", name, err)
		}
	}
	prefix := f.dirKey(name)
	seen := map[string]int{}
	var list []dsi.FileInfo
	found := isRoot(name)
	for oi := range f.c.ListObjects(ctx, f.bucket, minio.ListObjectsOptions{Prefix: prefix}) {
		if oi.Err != nil {
			return nil, opErr("readdir", name, mapErr(oi.Err))
		}
		found = true
		rest := strings.TrimPrefix(oi.Key, prefix)
		if rest == "" {
			continue // the marker itself
		}
		var fi dsi.FileInfo
		if strings.HasSuffix(rest, "/") {
			rest = strings.TrimSuffix(rest, "/")
			fi = dirFileInfo(rest, oi.LastModified)
		} else {
			fi = fileInfo(rest, oi)
		}
		if rest == "" || strings.Contains(rest, "/") {
			continue // "a//b" keys have no name here
		}
		if i, dup := seen[fi.Name]; dup {
			// A file and a directory of the same name: the directory wins.
			if fi.IsDir() {
				list[i] = fi
			}
			continue
		}
		seen[fi.Name] = len(list)
		list = append(list, fi)
	}
	if !found {
		return nil, opErr("readdir", name, dsi.ErrNotExist)
	}
	slices.SortFunc(list, func(a, b dsi.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// Open implements dsi.Storage.
func (f *FS) Open(ctx context.Context, name string) (dsi.Reader, error) {
	if isRoot(name) {
		return nil, opErr("open", name, dsi.ErrIsDir)
	}
	oi, err := f.head(ctx, name)
	if err != nil {
		if !errors.Is(err, dsi.ErrNotExist) {
			return nil, opErr("open", name, err)
		}
		if fi, serr := f.Stat(ctx, name); serr == nil && fi.IsDir() {
			return nil, opErr("open", name, dsi.ErrIsDir)
		}
		if perr := f.checkParent(ctx, "open", name); perr != nil {
			return nil, perr
		}
		return nil, opErr("open", name, dsi.ErrNotExist)
	}
	return newReader(f, f.key(name), oi), nil
}

// Create implements dsi.Storage. The object appears when the Writer's
// Close succeeds; until then the old content (if any) stays in place.
func (f *FS) Create(ctx context.Context, name string, opts dsi.CreateOptions) (dsi.Writer, error) {
	if isRoot(name) {
		return nil, opErr("create", name, dsi.ErrIsDir)
	}
	if err := f.checkParent(ctx, "create", name); err != nil {
		return nil, err
	}
	oi, err := f.head(ctx, name)
	exists := err == nil
	if err != nil && !errors.Is(err, dsi.ErrNotExist) {
		return nil, opErr("create", name, err)
	}
	if !exists {
		if ok, _, err := f.dirInfo(ctx, name); err != nil {
			return nil, opErr("create", name, err)
		} else if ok {
			return nil, opErr("create", name, dsi.ErrIsDir)
		}
	}
	perm := opts.Perm.Perm()
	if opts.Perm == 0 {
		perm = 0o644
	}
	meta := map[string]string{metaMode: fmt.Sprintf("%04o", perm), metaID: newID()}
	if exists {
		fi := fileInfo(name, oi)
		if fi.Unique != "" {
			meta[metaID] = fi.Unique
		}
		if opts.Perm == 0 {
			meta[metaMode] = fmt.Sprintf("%04o", fi.Mode.Perm())
		}
	}
	w := newWriter(ctx, f, name, meta)
	if exists && !opts.Truncate {
		w.base, w.baseETag = oi.Size, oi.ETag
	}
	if opts.Truncate && opts.Size >= 0 {
		// The file's size is declared (ALLO): nothing is written past it.
		w.limit = min(w.limit, opts.Size)
	}
	return w, nil
}

// Mkdir implements dsi.Storage: it writes the directory's marker.
func (f *FS) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	if isRoot(name) {
		return opErr("mkdir", name, dsi.ErrExist)
	}
	if err := f.checkParent(ctx, "mkdir", name); err != nil {
		return err
	}
	if _, err := f.Stat(ctx, name); err == nil {
		return opErr("mkdir", name, dsi.ErrExist)
	} else if !errors.Is(err, dsi.ErrNotExist) {
		return err
	}
	if perm == 0 {
		perm = 0o755
	}
	return f.putMarker(ctx, name, map[string]string{metaMode: fmt.Sprintf("%04o", perm.Perm())})
}

func (f *FS) putMarker(ctx context.Context, name string, meta map[string]string) error {
	_, err := f.c.PutObject(ctx, f.bucket, f.dirKey(name), strings.NewReader(""), 0,
		minio.PutObjectOptions{UserMetadata: meta, DisableMultipart: true})
	if err != nil {
		return opErr("mkdir", name, mapErr(err))
	}
	return nil
}

// keepParent writes the marker of name's parent directory when it has
// none, so that the directory outlives its last entry.
func (f *FS) keepParent(ctx context.Context, name string) error {
	dir := path.Dir(path.Clean("/" + name))
	if isRoot(dir) {
		return nil
	}
	// Always written: some stores (SeaweedFS) answer a HEAD of "dir/"
	// for a directory they keep only while it has entries.
	oi, err := f.c.StatObject(ctx, f.bucket, f.dirKey(dir), minio.StatObjectOptions{})
	var meta map[string]string
	if err == nil {
		meta = userMeta(oi)
	}
	return f.putMarker(ctx, dir, meta)
}

// Remove implements dsi.Storage.
func (f *FS) Remove(ctx context.Context, name string) error {
	if isRoot(name) {
		return opErr("remove", name, dsi.ErrIsDir)
	}
	if _, err := f.head(ctx, name); err != nil {
		if !errors.Is(err, dsi.ErrNotExist) {
			return opErr("remove", name, err)
		}
		if ok, _, derr := f.dirInfo(ctx, name); derr == nil && ok {
			return opErr("remove", name, dsi.ErrIsDir)
		}
		return opErr("remove", name, dsi.ErrNotExist)
	}
	if err := f.keepParent(ctx, name); err != nil {
		return err
	}
	if err := f.c.RemoveObject(ctx, f.bucket, f.key(name), minio.RemoveObjectOptions{}); err != nil {
		return opErr("remove", name, mapErr(err))
	}
	return nil
}

// Rmdir implements dsi.Storage.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	if isRoot(name) {
		return opErr("rmdir", name, dsi.ErrPermission)
	}
	if _, err := f.head(ctx, name); err == nil {
		return opErr("rmdir", name, dsi.ErrNotDir)
	} else if !errors.Is(err, dsi.ErrNotExist) {
		return opErr("rmdir", name, err)
	}
	prefix := f.dirKey(name)
	res, err := f.core.ListObjectsV2(f.bucket, prefix, "", "", "", 2)
	if err != nil {
		return opErr("rmdir", name, mapErr(err))
	}
	if len(res.Contents) == 0 && len(res.CommonPrefixes) == 0 {
		return opErr("rmdir", name, dsi.ErrNotExist)
	}
	for _, o := range res.Contents {
		if o.Key != prefix {
			return opErr("rmdir", name, dsi.ErrNotEmpty)
		}
	}
	if len(res.CommonPrefixes) > 0 {
		return opErr("rmdir", name, dsi.ErrNotEmpty)
	}
	if err := f.keepParent(ctx, name); err != nil {
		return err
	}
	if err := f.c.RemoveObject(ctx, f.bucket, prefix, minio.RemoveObjectOptions{}); err != nil {
		return opErr("rmdir", name, mapErr(err))
	}
	return nil
}

// maxCopy is the largest object one CopyObject may copy; larger ones are
// copied part by part (ComposeObject).
const maxCopy = 5 << 30

// copyObject copies key src to dst on the server, metadata included.
func (f *FS) copyObject(ctx context.Context, src, dst string, size int64) error {
	srcOpts := minio.CopySrcOptions{Bucket: f.bucket, Object: src}
	dstOpts := minio.CopyDestOptions{Bucket: f.bucket, Object: dst}
	if size <= maxCopy {
		_, err := f.c.CopyObject(ctx, dstOpts, srcOpts)
		return mapErr(err)
	}
	oi, err := f.c.StatObject(ctx, f.bucket, src, minio.StatObjectOptions{})
	if err != nil {
		return mapErr(err)
	}
	dstOpts.UserMetadata = oi.UserMetadata
	dstOpts.ReplaceMetadata = true
	_, err = f.c.ComposeObject(ctx, dstOpts, srcOpts)
	return mapErr(err)
}

// Rename implements dsi.Storage: a server-side copy, then a delete. A
// directory is renamed object by object, which is not atomic.
func (f *FS) Rename(ctx context.Context, from, to string) error {
	if isRoot(from) || isRoot(to) {
		return opErr("rename", from, dsi.ErrInvalid)
	}
	from, to = path.Clean("/"+from), path.Clean("/"+to)
	src, err := f.Stat(ctx, from)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if err := f.checkParent(ctx, "rename", to); err != nil {
		return err
	}
	dst, derr := f.Stat(ctx, to)
	if derr != nil && !errors.Is(derr, dsi.ErrNotExist) {
		return derr
	}
	dstExists := derr == nil
	if !src.IsDir() {
		if dstExists && dst.IsDir() {
			return opErr("rename", to, dsi.ErrIsDir)
		}
		if err := f.copyObject(ctx, f.key(from), f.key(to), src.Size); err != nil {
			return opErr("rename", from, err)
		}
		if err := f.keepParent(ctx, from); err != nil {
			return err
		}
		if err := f.c.RemoveObject(ctx, f.bucket, f.key(from), minio.RemoveObjectOptions{}); err != nil {
			return opErr("rename", from, mapErr(err))
		}
		return nil
	}
	if strings.HasPrefix(to+"/", from+"/") {
		return opErr("rename", from, dsi.ErrInvalid)
	}
	if dstExists {
		if !dst.IsDir() {
			return opErr("rename", to, dsi.ErrExist)
		}
		if err := f.Rmdir(ctx, to); err != nil {
			if errors.Is(err, dsi.ErrNotEmpty) {
				return opErr("rename", to, dsi.ErrNotEmpty)
			}
			return err
		}
	}
	if err := f.keepParent(ctx, from); err != nil {
		return err
	}
	srcPrefix, dstPrefix := f.dirKey(from), f.dirKey(to)
	var moved []string
	hasMarker := false
	for oi := range f.c.ListObjects(ctx, f.bucket, minio.ListObjectsOptions{Prefix: srcPrefix, Recursive: true}) {
		if oi.Err != nil {
			return opErr("rename", from, mapErr(oi.Err))
		}
		if oi.Key == srcPrefix {
			hasMarker = true
		}
		dstKey := dstPrefix + strings.TrimPrefix(oi.Key, srcPrefix)
		if strings.HasSuffix(oi.Key, "/") {
			// A marker: written anew (some stores cannot copy them).
			var meta map[string]string
			if m, err := f.c.StatObject(ctx, f.bucket, oi.Key, minio.StatObjectOptions{}); err == nil {
				meta = userMeta(m)
			}
			if _, err := f.c.PutObject(ctx, f.bucket, dstKey, strings.NewReader(""), 0,
				minio.PutObjectOptions{UserMetadata: meta, DisableMultipart: true}); err != nil {
				return opErr("rename", from, mapErr(err))
			}
		} else if err := f.copyObject(ctx, oi.Key, dstKey, oi.Size); err != nil {
			return opErr("rename", from, err)
		}
		moved = append(moved, oi.Key)
	}
	if !hasMarker {
		if err := f.putMarker(ctx, to, nil); err != nil {
			return err
		}
	}
	// Deepest first: a store with real directories (SeaweedFS) keeps one
	// whose marker is removed while it still has entries.
	slices.Reverse(moved)
	for _, k := range moved {
		if err := f.c.RemoveObject(ctx, f.bucket, k, minio.RemoveObjectOptions{}); err != nil {
			return opErr("rename", from, mapErr(err))
		}
	}
	return nil
}

// userMeta returns the user metadata of an object, keys without the
// x-amz-meta- prefix.
func userMeta(oi minio.ObjectInfo) map[string]string {
	meta := map[string]string{}
	for k, v := range oi.UserMetadata {
		meta[strings.TrimPrefix(http.CanonicalHeaderKey(k), "X-Amz-Meta-")] = v
	}
	return meta
}

// Checksum returns the store's own checksum of the whole of name for
// alg (a CKSM algorithm name) when the store has it, without reading the
// object: "MD5" from the ETag of an object uploaded in one piece, and
// "MD5", "SHA1", "SHA256", "SHA512" or "CRC32C" from the full-object
// checksum the store keeps when the uploader sent one
// (x-amz-checksum-*; a multipart upload's composite checksum is not the
// file's and is not used). Otherwise it fails with dsi.ErrNotSupported,
// and the caller computes the checksum from the bytes.
func (f *FS) Checksum(ctx context.Context, name, alg string) (string, error) {
	if isRoot(name) {
		return "", opErr("checksum", name, dsi.ErrIsDir)
	}
	oi, err := f.c.StatObject(ctx, f.bucket, f.key(name), minio.StatObjectOptions{Checksum: true})
	if err != nil {
		return "", opErr("checksum", name, mapErr(err))
	}
	if sum, ok := storeChecksum(oi, alg); ok {
		return sum, nil
	}
	return "", opErr("checksum", name, dsi.ErrNotSupported)
}

// storeChecksum is the checksum for alg that oi carries, in lowercase hex.
func storeChecksum(oi minio.ObjectInfo, alg string) (string, bool) {
	var b64 string
	switch strings.ToUpper(alg) {
	case "MD5":
		etag := strings.Trim(oi.ETag, `"`)
		if len(etag) == 32 {
			if _, err := hex.DecodeString(etag); err == nil {
				return strings.ToLower(etag), true
			}
		}
		b64 = oi.ChecksumMD5
	case "SHA1":
		b64 = oi.ChecksumSHA1
	case "SHA256":
		b64 = oi.ChecksumSHA256
	case "SHA512":
		b64 = oi.ChecksumSHA512
	case "CRC32C":
		b64 = oi.ChecksumCRC32C
	}
	if b64 == "" || strings.Contains(b64, "-") || strings.EqualFold(oi.ChecksumMode, "COMPOSITE") {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) == 0 {
		return "", false
	}
	return hex.EncodeToString(raw), true
}

// WritesInPlace reports false: a Writer's object appears only whole, but
// a failed upload's Writer is still closed by the server, which keeps
// the bytes for a restart; so uploads go to a part file renamed (copied)
// into place, as on POSIX.
func (f *FS) WritesInPlace() bool { return false }

var (
	_ dsi.Storage       = (*FS)(nil)
	_ dsi.InPlaceWriter = (*FS)(nil)
)
