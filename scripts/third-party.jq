# The packages linked into the root package's binary: its normal
# dependencies, transitively, without proc-macros (they run in the compiler
# and leave no code of their own) nor build dependencies. One line each:
# name, version, the licence it declares, and its package directory (where
# scripts/release.sh looks for its licence texts).
(.packages | map({key: .id, value: .}) | from_entries) as $pkg
| (.resolve.nodes | map({key: .id, value: [.deps[] | select(any(.dep_kinds[]; .kind == null)) | .pkg]})
   | from_entries) as $deps
| def linked: any($pkg[.].targets[]; .kind | index("proc-macro")) | not;
  def reach($seen; $frontier):
    if ($frontier | length) == 0 then $seen
    else ([$frontier[] | $deps[.][] | select(linked) | select($seen[.] | not)] | unique) as $new
      | reach($seen + ($new | map({key: ., value: true}) | from_entries); $new)
    end;
  .resolve.root as $root
| reach({($root): true}; [$root]) | keys[] | select(. != $root) | $pkg[.]
| [.name, .version, (.license // ("see " + (.license_file // "its source"))),
   (.manifest_path | sub("/[^/]*$"; ""))] | @tsv
