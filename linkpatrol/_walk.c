/* The walk of extraction over libxml2's tree, in C: what extract.py's own walk reads of
 * each element, without making a Python proxy of every element.
 *
 * walk(root, tags, names, keep) -> (items, ids)
 *
 *   root   an lxml element (the document's root)
 *   tags   a frozenset of the element names wanted, or None for every element
 *   names  a tuple of the attribute names read (str, ASCII, no namespace)
 *   keep   a frozenset of the element names whose lxml element is given too
 *
 *   items  for each element wanted, in document order from the root:
 *          (tag, line or None, {name: value} of the names it has, element or None)
 *   ids    every element's non-empty id attribute, in document order, in the whole
 *          document as XPath's //@id has them (libxml2 may leave content after the root)
 *
 * Tags, lines and values are what lxml gives for the same elements (element.tag,
 * element.sourceline, element.get(name)): values are read through lxml's public C API,
 * and a line libxml2 has capped is read from the element's proxy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <libxml/tree.h>
#include "lxml.etree_api.h"

#define CACHE_SIZE 256 /* distinct element names remembered per walk; a page has dozens */
#define MAX_NAMES 32   /* attribute names read */
#define CAPPED_LINE 65535

static PyObject *element_type; /* lxml.etree._Element */

typedef struct {
    const xmlChar *name; /* libxml2 keeps one copy of each name of a document */
    PyObject *tag;       /* borrowed from the walk's list of tags */
    int wanted;
    int kept;
} CachedName;

typedef struct {
    PyObject *tags, *keep;
    PyObject *tag_strings; /* owns the tags made */
    CachedName cache[CACHE_SIZE];
    Py_ssize_t name_count;
    const char *names[MAX_NAMES];
    PyObject *name_objects[MAX_NAMES];
} Walk;

/* The element's tag as lxml spells it, whether it is wanted, whether its proxy is kept;
 * -1 on error. A name in no namespace is remembered by its pointer. */
static int
tag_of(Walk *walk, xmlNode *node, PyObject **tag, int *wanted, int *kept)
{
    CachedName *slot = NULL;
    if (node->ns == NULL) {
        size_t hash = ((size_t)node->name >> 4) % CACHE_SIZE;
        for (size_t probe = 0; probe < CACHE_SIZE; probe++) {
            CachedName *at = &walk->cache[(hash + probe) % CACHE_SIZE];
            if (at->name == node->name) {
                *tag = at->tag;
                *wanted = at->wanted;
                *kept = at->kept;
                return 0;
            }
            if (at->name == NULL) {
                slot = at;
                break;
            }
        }
    }
    PyObject *made;
    if (node->ns != NULL && node->ns->href != NULL)
        made = PyUnicode_FromFormat("{%s}%s", (const char *)node->ns->href,
                                    (const char *)node->name);
    else
        made = PyUnicode_DecodeUTF8((const char *)node->name,
                                    (Py_ssize_t)strlen((const char *)node->name), "strict");
    if (made == NULL)
        return -1;
    if (PyList_Append(walk->tag_strings, made) < 0) {
        Py_DECREF(made);
        return -1;
    }
    Py_DECREF(made); /* the list holds it */
    int is_wanted = walk->tags == Py_None ? 1 : PySet_Contains(walk->tags, made);
    int is_kept = PySet_Contains(walk->keep, made);
    if (is_wanted < 0 || is_kept < 0)
        return -1;
    if (slot != NULL) {
        slot->name = node->name;
        slot->tag = made;
        slot->wanted = is_wanted;
        slot->kept = is_kept;
    }
    *tag = made;
    *wanted = is_wanted;
    *kept = is_kept;
    return 0;
}

/* element.sourceline: libxml2's line where it is below the cap, else the proxy's. */
static PyObject *
line_of(struct LxmlDocument *doc, xmlNode *node)
{
    if (node->line != CAPPED_LINE) {
        if (node->line == 0)
            Py_RETURN_NONE;
        return PyLong_FromLong((long)node->line);
    }
    PyObject *element = (PyObject *)elementFactory(doc, node);
    if (element == NULL)
        return NULL;
    PyObject *line = PyObject_GetAttrString(element, "sourceline");
    Py_DECREF(element);
    return line;
}

/* Add the element's non-empty id to ids, and the names read to attrs (when not NULL). */
static int
read_attributes(Walk *walk, xmlNode *node, PyObject *ids, PyObject *attrs)
{
    for (xmlAttr *attr = node->properties; attr != NULL; attr = attr->next) {
        if (attr->ns != NULL || attr->name == NULL)
            continue;
        const char *name = (const char *)attr->name;
        int is_id = strcmp(name, "id") == 0;
        PyObject *key = NULL; /* the name read, if it is one and not read yet */
        for (Py_ssize_t i = 0; attrs != NULL && i < walk->name_count; i++) {
            if (strcmp(name, walk->names[i]) == 0) {
                int has = PyDict_Contains(attrs, walk->name_objects[i]);
                if (has < 0)
                    return -1;
                if (!has) /* the first of a name is the one lxml reads */
                    key = walk->name_objects[i];
                break;
            }
        }
        if (!is_id && key == NULL)
            continue;
        PyObject *value = attributeValueFromNsName(node, NULL, attr->name);
        if (value == NULL)
            return -1;
        if (value == Py_None) {
            Py_DECREF(value);
            continue;
        }
        int failed = 0;
        if (is_id && PyUnicode_GET_LENGTH(value) > 0)
            failed = PyList_Append(ids, value) < 0;
        if (!failed && key != NULL)
            failed = PyDict_SetItem(attrs, key, value) < 0;
        Py_DECREF(value);
        if (failed)
            return -1;
    }
    return 0;
}

/* items is NULL outside the root: only the ids are read there. */
static int
visit(Walk *walk, struct LxmlDocument *doc, xmlNode *node, PyObject *items, PyObject *ids)
{
    if (items == NULL)
        return read_attributes(walk, node, ids, NULL);
    PyObject *tag;
    int wanted, kept;
    if (tag_of(walk, node, &tag, &wanted, &kept) < 0)
        return -1;
    if (!wanted)
        return read_attributes(walk, node, ids, NULL);
    PyObject *attrs = PyDict_New();
    if (attrs == NULL)
        return -1;
    if (read_attributes(walk, node, ids, attrs) < 0) {
        Py_DECREF(attrs);
        return -1;
    }
    PyObject *line = line_of(doc, node);
    if (line == NULL) {
        Py_DECREF(attrs);
        return -1;
    }
    PyObject *element;
    if (kept) {
        element = (PyObject *)elementFactory(doc, node);
        if (element == NULL) {
            Py_DECREF(attrs);
            Py_DECREF(line);
            return -1;
        }
    } else {
        element = Py_NewRef(Py_None);
    }
    PyObject *item = PyTuple_Pack(4, tag, line, attrs, element);
    Py_DECREF(attrs);
    Py_DECREF(line);
    Py_DECREF(element);
    if (item == NULL)
        return -1;
    int failed = PyList_Append(items, item) < 0;
    Py_DECREF(item);
    return failed ? -1 : 0;
}

/* Every element of the tree from start, in document order; items only from top's. */
static int
traverse(Walk *walk, struct LxmlDocument *doc, xmlNode *start, xmlNode *top, PyObject *items,
         PyObject *ids)
{
    int inside = 0;
    xmlNode *node = start;
    while (node != NULL) {
        if (node->type == XML_ELEMENT_NODE) {
            if (node == top)
                inside = 1;
            if (visit(walk, doc, node, inside ? items : NULL, ids) < 0)
                return -1;
            if (node->children != NULL) {
                node = node->children;
                continue;
            }
        }
        for (;;) { /* node and all within it are done */
            if (node == top)
                inside = 0;
            if (node == start)
                return 0;
            if (node->next != NULL) {
                node = node->next;
                break;
            }
            node = node->parent;
            if (node == NULL)
                return 0;
        }
    }
    return 0;
}

static PyObject *
walk(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "walk(root, tags, names, keep) takes 4 arguments");
        return NULL;
    }
    PyObject *root = args[0];
    int is_element = PyObject_IsInstance(root, element_type);
    if (is_element < 0)
        return NULL;
    if (!is_element) {
        PyErr_SetString(PyExc_TypeError, "walk: root must be an lxml element");
        return NULL;
    }
    if (!(args[1] == Py_None || PyFrozenSet_Check(args[1])) || !PyFrozenSet_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "walk: tags and keep must be frozensets");
        return NULL;
    }
    if (!PyTuple_Check(args[2]) || PyTuple_GET_SIZE(args[2]) > MAX_NAMES) {
        PyErr_SetString(PyExc_TypeError, "walk: names must be a tuple of at most 32 str");
        return NULL;
    }
    Walk *state = PyMem_Calloc(1, sizeof(Walk));
    if (state == NULL)
        return PyErr_NoMemory();
    state->tags = args[1];
    state->keep = args[3];
    state->name_count = PyTuple_GET_SIZE(args[2]);
    for (Py_ssize_t i = 0; i < state->name_count; i++) {
        PyObject *name = PyTuple_GET_ITEM(args[2], i);
        const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        if (text == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "walk: names must be str");
            PyMem_Free(state);
            return NULL;
        }
        state->names[i] = text;
        state->name_objects[i] = name;
    }
    PyObject *items = PyList_New(0);
    PyObject *ids = PyList_New(0);
    state->tag_strings = PyList_New(0);
    PyObject *result = NULL;
    if (items == NULL || ids == NULL || state->tag_strings == NULL)
        goto done;

    struct LxmlElement *element = (struct LxmlElement *)root;
    xmlNode *top = element->_c_node;
    if (top->doc != NULL && top->doc->children != NULL) {
        for (xmlNode *tree = top->doc->children; tree != NULL; tree = tree->next) {
            if (traverse(state, element->_doc, tree, top, items, ids) < 0)
                goto done;
        }
    } else if (traverse(state, element->_doc, top, top, items, ids) < 0) {
        goto done;
    }
    result = PyTuple_Pack(2, items, ids);
done:
    Py_XDECREF(items);
    Py_XDECREF(ids);
    Py_XDECREF(state->tag_strings);
    PyMem_Free(state);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL,
     "walk(root, tags, names, keep) -> (items, ids)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "linkpatrol._walk",
    "The walk of extraction over libxml2's tree, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__walk(void)
{
    if (import_lxml__etree() < 0)
        return NULL;
    PyObject *etree = PyImport_ImportModule("lxml.etree");
    if (etree == NULL)
        return NULL;
    element_type = PyObject_GetAttrString(etree, "_Element");
    Py_DECREF(etree);
    if (element_type == NULL)
        return NULL;
    return PyModule_Create(&module);
}
