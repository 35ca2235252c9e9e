constPetxxxuxx<`x|x*stttttttttttttttttttt$$%$$$tttttttttttttttttttttttttt.t()}`;


codemode._()