const s = `${codemode.t()}`;


codemode.u()