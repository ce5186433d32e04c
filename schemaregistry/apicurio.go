package schemaregistry

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Apicurio Registry's native v3 API (paths checked in Apicurio 3.3.x's
// common/src/main/resources/META-INF/openapi.json and
// app/src/main/java/io/apicurio/registry/rest/v3/impl/IdsResourceImpl.java):
//
//	GET /ids/globalIds/{globalId}?returnArtifactType=true   content; type in X-Registry-ArtifactType
//	GET /ids/globalIds/{globalId}/references                 []ArtifactReference
//	GET /ids/contentIds/{contentId}                          content (no type header)
//	GET /ids/contentIds/{contentId}/references               []ArtifactReference
//	GET /search/versions?contentId=N&limit=1                 the artifact type of a contentId
//	GET /groups/{g}/artifacts/{a}/versions/{v}/content       a referenced schema
//	GET /groups/{g}/artifacts/{a}/versions/{v}/references    its references

type wireArtifactRef struct {
	GroupID    string `json:"groupId"`
	ArtifactID string `json:"artifactId"`
	Version    string `json:"version"`
	Name       string `json:"name"`
}

type wireVersionSearch struct {
	Count    int `json:"count"`
	Versions []struct {
		ArtifactType string `json:"artifactType"`
	} `json:"versions"`
}

func nativeRefs(ws []wireArtifactRef) []Reference {
	var refs []Reference
	for _, w := range ws {
		refs = append(refs, Reference{Name: w.Name, GroupID: w.GroupID, ArtifactID: w.ArtifactID, ArtifactVersion: w.Version})
	}
	return refs
}

// SchemaByGlobalID returns the schema of an Apicurio artifact-version
// globalId, with its references resolved, from the native v3 API.
func (c *Client) SchemaByGlobalID(ctx context.Context, globalID int64) (*Schema, error) {
	if err := c.nativeCheck("globalId", globalID); err != nil {
		return nil, err
	}
	return c.lookup(ctx, "gid:"+strconv.FormatInt(globalID, 10), func(ctx context.Context) (*Schema, error) {
		idp := "/ids/globalIds/" + strconv.FormatInt(globalID, 10)
		resp, err := c.get(ctx, c.native, idp+"?returnArtifactType=true", acceptAny)
		if err != nil {
			return nil, err
		}
		typ := strings.ToUpper(strings.TrimSpace(resp.header.Get("X-Registry-ArtifactType")))
		if typ == "" {
			if typ, err = c.searchType(ctx, "globalId", globalID); err != nil {
				return nil, err
			}
			if typ == "" {
				return nil, fmt.Errorf("%w: Apicurio reports no artifact type for globalId %d", ErrUnavailable, globalID)
			}
		}
		return c.nativeSchema(ctx, idp, typ, resp.body, globalID)
	})
}

// SchemaByContentID returns the schema of an Apicurio contentId, with its
// references resolved, from the native v3 API. (Apicurio's ccompat ids are
// contentIds too, so with the default apicurio.ccompat.legacy-id-mode a
// contentId can also be looked up with SchemaByID.)
func (c *Client) SchemaByContentID(ctx context.Context, contentID int64) (*Schema, error) {
	if err := c.nativeCheck("contentId", contentID); err != nil {
		return nil, err
	}
	return c.lookup(ctx, "cid:"+strconv.FormatInt(contentID, 10), func(ctx context.Context) (*Schema, error) {
		idp := "/ids/contentIds/" + strconv.FormatInt(contentID, 10)
		resp, err := c.get(ctx, c.native, idp, acceptAny)
		if err != nil {
			return nil, err
		}
		typ, err := c.searchType(ctx, "contentId", contentID)
		if err != nil {
			return nil, err
		}
		if typ == "" {
			// Content no artifact version points at any more: only the
			// content type can tell Protobuf from the JSON-typed rest.
			if !strings.Contains(resp.header.Get("Content-Type"), "protobuf") {
				return nil, fmt.Errorf("%w: no artifact version has contentId %d", ErrUnknownSchema, contentID)
			}
			typ = TypeProtobuf
		}
		return c.nativeSchema(ctx, idp, typ, resp.body, contentID)
	})
}

func (c *Client) nativeCheck(what string, id int64) error {
	if c.native == nil {
		c.st.lookups.Add(1)
		return fmt.Errorf("%w (lookup of %s %d)", ErrNoApicurioAPI, what, id)
	}
	if id <= 0 {
		c.st.lookups.Add(1)
		return fmt.Errorf("%w: Apicurio %s %d", ErrUnknownSchema, what, id)
	}
	return nil
}

func (c *Client) searchType(ctx context.Context, param string, id int64) (string, error) {
	var res wireVersionSearch
	path := "/search/versions?" + param + "=" + strconv.FormatInt(id, 10) + "&limit=1"
	if err := c.getJSON(ctx, c.native, path, acceptJSON, &res); err != nil {
		return "", err
	}
	if len(res.Versions) == 0 {
		return "", nil
	}
	return strings.ToUpper(res.Versions[0].ArtifactType), nil
}

func (c *Client) nativeSchema(ctx context.Context, idPath, typ string, body []byte, id int64) (*Schema, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: GET %s: empty content", ErrUnavailable, idPath)
	}
	var refs []wireArtifactRef
	if err := c.getJSON(ctx, c.native, idPath+"/references", acceptJSON, &refs); err != nil {
		return nil, err
	}
	s := &Schema{Type: typ, Text: string(body), ID: id, References: nativeRefs(refs)}
	return s, c.resolveNative(ctx, s)
}

// resolveNative fills s.Deps from Apicurio artifact versions; a reference
// without a group is in group "default", one without a version follows the
// latest version (and is then not cached).
func (c *Client) resolveNative(ctx context.Context, s *Schema) error {
	loc := func(r Reference) (g, a, v string) {
		g, a, v = r.GroupID, r.ArtifactID, r.ArtifactVersion
		if g == "" {
			g = "default"
		}
		if v == "" {
			v = "branch=latest"
		}
		return g, a, v
	}
	return c.resolve(ctx, s, func(ctx context.Context, r Reference) (*Schema, error) {
		g, a, v := loc(r)
		key := "av:" + g + "\x00" + a + "\x00" + v
		if v, ok := c.cache.get(key); ok {
			return v.(*Schema), nil
		}
		base := "/groups/" + url.PathEscape(g) + "/artifacts/" + url.PathEscape(a) + "/versions/" + url.PathEscape(v)
		resp, err := c.get(ctx, c.native, base+"/content", acceptAny)
		if err != nil {
			return nil, err
		}
		var refs []wireArtifactRef
		if err := c.getJSON(ctx, c.native, base+"/references", acceptJSON, &refs); err != nil {
			return nil, err
		}
		dep := &Schema{Type: s.Type, Text: string(resp.body), References: nativeRefs(refs)}
		if r.ArtifactVersion != "" {
			c.cache.add(key, dep, 0)
		}
		return dep, nil
	}, func(r Reference) string {
		g, a, v := loc(r)
		return g + "\x00" + a + "\x00" + v
	})
}
