const r = await codemode.fs__read_file({path: "/x"});
return r